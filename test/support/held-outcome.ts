import { join } from 'node:path';
import { startFixtureServer } from './fixture-server.js';

/** Where test/fixtures/provision-server.ts keeps its store and notes what it did. */
export interface HeldOutcomeFiles {
  dataDir: string;
  /** One line per invocation of its tool: the far side of the boundary, counted. */
  counterFile: string;
  /** One line per outcome write it was asked for and held (HOLD_OUTCOME=1). */
  outcomeFile: string;
}

export function heldOutcomeFiles(dataDir: string): HeldOutcomeFiles {
  return {
    dataDir,
    counterFile: join(dataDir, 'invocations.log'),
    outcomeFile: join(dataDir, 'held-outcomes.log'),
  };
}

/**
 * The library server of test/fixtures/provision-server.ts on stdio, and a client on it. With
 * `holdOutcome` its store never writes a completed outcome: the answer has left, the write has not.
 */
export function startHeldOutcomeServer(files: HeldOutcomeFiles, holdOutcome: boolean) {
  return startFixtureServer('provision-server.ts', {
    IDEM_DATA_DIR: files.dataDir,
    COUNTER_FILE: files.counterFile,
    OUTCOME_FILE: files.outcomeFile,
    HOLD_OUTCOME: holdOutcome ? '1' : '0',
  });
}
