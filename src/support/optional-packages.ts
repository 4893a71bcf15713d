import type * as OpenTelemetry from '@opentelemetry/api';
import type pg from 'pg';
import type * as PromClient from 'prom-client';
import type * as Ssh2 from 'ssh2';
import { MissingPackageError, type OptionalPackage } from '../errors.js';

/**
 * The one way Idem loads pg, ssh2, prom-client and @opentelemetry/api: on
 * first use, never from a module that `import 'idem'` or a SQLite gateway
 * loads, so that a user who needs none of them installs none of them
 * (docs/adr/0038-optional-peer-packages.md). Each loader is a literal
 * `import()` so that its type is the package's own.
 */

export async function loadPg(): Promise<typeof pg> {
  return (await importOptional('pg', () => import('pg'))).default;
}

export function loadSsh2(): Promise<typeof Ssh2> {
  return importOptional('ssh2', () => import('ssh2'));
}

export function loadPromClient(): Promise<typeof PromClient> {
  return importOptional('prom-client', () => import('prom-client'));
}

/** undefined when @opentelemetry/api is not installed: then nobody can have registered a tracer to record into. */
export async function loadOpenTelemetryIfInstalled(): Promise<typeof OpenTelemetry | undefined> {
  try {
    return await importOptional('@opentelemetry/api', () => import('@opentelemetry/api'));
  } catch (error) {
    if (error instanceof MissingPackageError) return undefined;
    throw error;
  }
}

/** `load()`, with "the package itself is not installed" said as MissingPackageError; any other failure as it is. */
async function importOptional<T>(name: OptionalPackage, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    // Node's words for the package itself missing; a dependency missing inside it is another failure.
    const missing =
      (error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND' &&
      (error as Error).message.startsWith(`Cannot find package '${name}'`);
    if (missing) throw new MissingPackageError(name, { cause: error });
    throw error;
  }
}
