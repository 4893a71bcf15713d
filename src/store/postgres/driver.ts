import type pg from 'pg';
import { loadPg } from '../../support/optional-packages.js';

/** pg once loaded: the store loads it when it opens, not when idem is imported (an optional peer). */
let loaded: typeof pg | undefined;

/** pg, or MissingPackageError naming it when it is not installed. */
export async function pgDriver(): Promise<typeof pg> {
  loaded ??= await loadPg();
  return loaded;
}

/** A statement the server refused (with its SQLSTATE). Only a loaded pg can have thrown one. */
export function isDatabaseError(error: unknown): error is pg.DatabaseError {
  return loaded !== undefined && error instanceof loaded.DatabaseError;
}
