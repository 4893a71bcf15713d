import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../src/executions/answers.js';
import { fixtureArgs } from './support/compiled-fixtures.js';
import { askUntilSettled } from './support/until-settled.js';
import { PATIENTLY } from './support/wait.js';

const dataDir = mkdtempSync(join(tmpdir(), 'idem-outcome-after-answer-'));
const counterFile = join(dataDir, 'invocations.log');
const outcomeFile = join(dataDir, 'held-outcomes.log');
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function startServer(holdOutcome: boolean) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...fixtureArgs(join(import.meta.dirname, 'fixtures/held-outcome-server.ts'))],
    env: {
      ...process.env,
      IDEM_DATA_DIR: dataDir,
      COUNTER_FILE: counterFile,
      OUTCOME_FILE: outcomeFile,
      HOLD_OUTCOME: holdOutcome ? '1' : '0',
    } as Record<string, string>,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'restarting-agent', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

const lines = (file: string) =>
  existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];

describe('a process SIGKILLed after its answer left and before its outcome was written (SQLite)', () => {
  it('the caller had the true answer; the execution reads unknown afterwards — never a second invocation, never a false replay', async () => {
    const first = await startServer(true);
    const answer = (await first.client.callTool({
      name: 'provision',
      arguments: { host: 'db-7' },
    })) as CallToolResult;
    // The answer left although the store has not written its outcome (and never will).
    expect(answer.isError).toBeFalsy();
    expect(answer.content).toEqual([{ type: 'text', text: 'provisioned db-7' }]);
    await vi.waitFor(() => expect(lines(outcomeFile)).toHaveLength(1), PATIENTLY);
    const [id] = lines(outcomeFile);
    expect(lines(counterFile)).toHaveLength(1);
    expect(lines(counterFile)[0]).toContain(id);
    process.kill(first.transport.pid as number, 'SIGKILL');
    await first.client.close().catch(() => {});

    const second = await startServer(false);
    const ask = () =>
      second.client.callTool({ name: 'provision', arguments: { host: 'db-7' } }) as Promise<CallToolResult>;
    const early = await ask();
    // The dead holder's lease is still running (in flight) or already lapsed (unknown); never a replay.
    expect(['IDEM_IN_FLIGHT', 'IDEM_OUTCOME_UNKNOWN']).toContain(idemCodeOf(early));
    const retry = idemCodeOf(early) === 'IDEM_IN_FLIGHT' ? await askUntilSettled(ask) : early;
    expect(idemCodeOf(retry)).toBe('IDEM_OUTCOME_UNKNOWN');
    expect((retry.structuredContent as { idem: { ref: string } }).idem.ref).toBe(id);
    const status = (await second.client.callTool({
      name: 'idem_execution_status',
      arguments: { ref: id },
    })) as CallToolResult;
    expect(idemCodeOf(status)).toBe('IDEM_OUTCOME_UNKNOWN');
    expect(lines(counterFile)).toHaveLength(1);
    await second.client.close();
  });
});
