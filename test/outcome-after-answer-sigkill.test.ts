import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../src/executions/answers.js';
import { linesOf } from './support/fixture-server.js';
import { heldOutcomeFiles, startHeldOutcomeServer } from './support/held-outcome.js';
import { askUntilSettled } from './support/until-settled.js';
import { PATIENTLY } from './support/wait.js';

const dataDir = mkdtempSync(join(tmpdir(), 'idem-outcome-after-answer-'));
const files = heldOutcomeFiles(dataDir);
const { counterFile, outcomeFile } = files;
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('a process SIGKILLed after its answer left and before its outcome was written (SQLite)', () => {
  it('the caller had the true answer; the execution reads unknown afterwards — never a second invocation, never a false replay', async () => {
    const first = await startHeldOutcomeServer(files, true);
    const answer = (await first.client.callTool({
      name: 'provision',
      arguments: { host: 'db-7' },
    })) as CallToolResult;
    // The answer left although the store has not written its outcome (and never will).
    expect(answer.isError).toBeFalsy();
    expect(answer.content).toEqual([{ type: 'text', text: 'provisioned db-7' }]);
    await vi.waitFor(() => expect(linesOf(outcomeFile)).toHaveLength(1), PATIENTLY);
    const [id] = linesOf(outcomeFile);
    expect(linesOf(counterFile)).toHaveLength(1);
    expect(linesOf(counterFile)[0]).toContain(id);
    process.kill(first.transport.pid as number, 'SIGKILL');
    await first.client.close().catch(() => {});

    const second = await startHeldOutcomeServer(files, false);
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
    expect(linesOf(counterFile)).toHaveLength(1);
    await second.client.close();
  });
});
