import { messageOf, StoreUnavailableError } from '../../errors.js';
import { refusalFromError } from './integrity.js';
import { nativeModuleProblem } from './native-module.js';

/**
 * What opening the store at `path` failed with, as the engine's errors: a driver not built for
 * this Node, a file that is not a usable store (refused: never written to), or unavailable.
 */
export function openFailure(error: unknown, path: string): Error {
  if (error instanceof StoreUnavailableError) return error;
  const notBuilt = nativeModuleProblem(error);
  if (notBuilt) return new StoreUnavailableError(notBuilt, { cause: error });
  const refused = refusalFromError(error, path);
  if (refused) return refused;
  return new StoreUnavailableError(`cannot open the SQLite store at ${path}: ${messageOf(error)}`, {
    cause: error,
  });
}
