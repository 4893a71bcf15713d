import Database from 'better-sqlite3';
import { type StoreRefusalReason, StoreUnavailableError } from '../../errors.js';
import { refusalFromError } from './integrity.js';

/** Refusals that say the file itself is damaged, as opposed to not accessible right now. */
export const DAMAGE: readonly StoreRefusalReason[] = ['corrupt', 'not_a_database'];

/**
 * Codes for "the database cannot be used right now" — lock held too long,
 * disk full, I/O failure — as opposed to a bug. Damage and a read-only file
 * are refusals (integrity.ts) and are mapped before these.
 */
const UNAVAILABLE_CODES =
  /^SQLITE_(BUSY|LOCKED|FULL|CANTOPEN|IOERR|READONLY|NOTADB|CORRUPT|PERM|NOMEM|NOLFS|AUTH)/;

/** Damage becomes a refusal, "cannot use it now" StoreUnavailableError, so the engine fails closed; a bug stays a bug. */
export function toStoreError(error: unknown, path: string): unknown {
  const refused = refusalFromError(error, path);
  if (refused) return refused;
  if (error instanceof Database.SqliteError && UNAVAILABLE_CODES.test(error.code)) {
    return new StoreUnavailableError(`SQLite store unavailable: ${error.message} (${error.code})`, {
      cause: error,
    });
  }
  return error;
}
