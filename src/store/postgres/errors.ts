import { messageOf, StoreUnavailableError } from '../../errors.js';
import { isDatabaseError } from './driver.js';

/**
 * SQLSTATE classes and codes that mean "the database cannot be used right
 * now" — connection lost or refused, server shutting down or starting,
 * resources (disk, memory, connections) exhausted, a timeout, a conflict
 * worth retrying, a read-only standby — as opposed to a bug in a statement.
 */
const UNAVAILABLE_SQLSTATE = /^(08...|53...|57P0[1-5]|57014|58...|55P03|40001|40P01|25006|28...|3D000)$/;

/** Failures below SQL: the socket, name resolution, the pool. */
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOENT',
]);
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed|Query read timeout|Cannot use a pool after calling end|timeout expired)/;

/** Connection failures become StoreUnavailableError, so the engine fails closed; a bug stays a bug. */
export function toStoreError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (isUnavailable(error)) {
    const code = (error as { code?: unknown }).code;
    return new StoreUnavailableError(
      `PostgreSQL store unavailable: ${messageOf(error)}${typeof code === 'string' ? ` (${code})` : ''}`,
      { cause: error },
    );
  }
  return error;
}

function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof AggregateError && error.errors.some(isUnavailable)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (isDatabaseError(error)) return UNAVAILABLE_SQLSTATE.test(code);
    if (UNAVAILABLE_ERRNO.has(code)) return true;
  }
  return UNAVAILABLE_MESSAGE.test(error.message);
}

/** For error listeners that must exist but have nothing to do: the call that meets the failure reports it. */
export function ignore(): void {}
