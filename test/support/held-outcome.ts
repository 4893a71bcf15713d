import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { fixtureArgs } from './compiled-fixtures.js';

/** Where test/fixtures/held-outcome-server.ts keeps its store and notes what it did. */
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
 * The library server of test/fixtures/held-outcome-server.ts on stdio, and a client on it. With
 * `holdOutcome` its store never writes a completed outcome: the answer has left, the write has not.
 */
export async function startHeldOutcomeServer(files: HeldOutcomeFiles, holdOutcome: boolean) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...fixtureArgs(join(import.meta.dirname, '../fixtures/held-outcome-server.ts'))],
    env: {
      ...process.env,
      IDEM_DATA_DIR: files.dataDir,
      COUNTER_FILE: files.counterFile,
      OUTCOME_FILE: files.outcomeFile,
      HOLD_OUTCOME: holdOutcome ? '1' : '0',
    } as Record<string, string>,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'restarting-agent', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

/** The lines a fixture wrote to `file` so far. */
export const linesOf = (file: string): string[] =>
  existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
