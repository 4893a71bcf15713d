import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../src/executions/answers.js';
import { linesOf, startFixtureServer } from './support/fixture-server.js';
import { askUntilSettled } from './support/until-settled.js';
import { PATIENTLY } from './support/wait.js';

const dataDir = mkdtempSync(join(tmpdir(), 'idem-sigkill-'));
const counterFile = join(dataDir, 'invocations.log');
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const startServer = (hang: boolean) =>
  startFixtureServer('provision-server.ts', {
    IDEM_DATA_DIR: dataDir,
    COUNTER_FILE: counterFile,
    HANG: hang ? '1' : '0',
  });

const invocations = () => linesOf(counterFile);

describe('a process SIGKILLed mid-dispatch (SQLite)', () => {
  it('the retry in a new process gets IDEM_OUTCOME_UNKNOWN once the lease expired — never a second invocation', async () => {
    const first = await startServer(true);
    void first.client.callTool({ name: 'provision', arguments: { host: 'db-7' } }).catch(() => {});
    await vi.waitFor(() => expect(invocations()).toHaveLength(1), PATIENTLY);
    expect(invocations()).toHaveLength(1);
    const pid = first.transport.pid as number;
    process.kill(pid, 'SIGKILL');
    await first.client.close().catch(() => {});

    const second = await startServer(false);
    const early = (await second.client.callTool({
      name: 'provision',
      arguments: { host: 'db-7' },
    })) as CallToolResult;
    // Either the dead process's lease is still running (in flight) or it already lapsed (unknown).
    expect(['IDEM_IN_FLIGHT', 'IDEM_OUTCOME_UNKNOWN']).toContain(idemCodeOf(early));
    // Retry until the dead holder's lease lapses (by the store's clock, however slow this machine is):
    // in flight until then, unknown after — and never dispatched again either way.
    const retry =
      idemCodeOf(early) === 'IDEM_IN_FLIGHT'
        ? await askUntilSettled(
            () =>
              second.client.callTool({
                name: 'provision',
                arguments: { host: 'db-7' },
              }) as Promise<CallToolResult>,
          )
        : early;
    expect(idemCodeOf(retry)).toBe('IDEM_OUTCOME_UNKNOWN');
    const ref = (retry.structuredContent as { idem: { ref: string } }).idem.ref;
    expect(invocations()[0]).toContain(ref);
    const status = (await second.client.callTool({
      name: 'idem_execution_status',
      arguments: { ref },
    })) as CallToolResult;
    expect(idemCodeOf(status)).toBe('IDEM_OUTCOME_UNKNOWN');
    expect(invocations()).toHaveLength(1);

    // A different intent still runs normally in the new process.
    const other = (await second.client.callTool({
      name: 'provision',
      arguments: { host: 'db-8' },
    })) as CallToolResult;
    expect(other.isError).toBeFalsy();
    expect(invocations()).toHaveLength(2);
    await second.client.close();
  });
});
