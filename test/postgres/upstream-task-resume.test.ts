/**
 * Two gateway processes on one PostgreSQL database, in front of an HTTP upstream that keeps its
 * tasks (fixtures/keeping-task-server.ts, in this process): the one following an upstream's task
 * is SIGKILLed, and the other — running all along — takes the execution over once the dead
 * holder's lease lapsed by the database's clock, follows the same task to its end and records
 * it. One tools/call reached the upstream.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/index.js';
import type { ExecutionRecord, ExecutionStore } from '../../src/store/types.js';
import { type KeepingTaskServer, startKeepingTaskServer } from '../gateway/fixtures/keeping-task-server.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { createdTaskId, modernTasksClient, untilTaskStatus } from '../support/modern-tasks.js';
import { postgresForTests, type TestPostgres } from '../support/postgres.js';
import { fleetMemberConfig } from '../support/postgres-fleet.js';
import { textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';

const work = mkdtempSync(join(tmpdir(), 'idem-pg-resume-'));
let pg: TestPostgres;
let upstream: KeepingTaskServer;
let store: ExecutionStore;
const gateways: GatewayProcess[] = [];

beforeAll(async () => {
  pg = await postgresForTests();
  upstream = await startKeepingTaskServer();
}, 120_000);

afterAll(async () => {
  for (const g of gateways) await g.kill('SIGKILL');
  await store?.close();
  await upstream?.close();
  await pg?.dispose();
  rmSync(work, { recursive: true, force: true });
}, 120_000);

async function startGateway(name: string): Promise<GatewayProcess> {
  const config = fleetMemberConfig(
    { work, name, url: pg.url },
    {
      upstreams: { remote: { url: upstream.url } },
      // A lease a loaded machine renews in time, lapsing soon after a kill; a pass every second.
      tools: {
        hold_task: { replay: 'review', task: 'optional', task_after: '0s', lease: '3s', timeout: '90s' },
      },
      sweep_interval: '1s',
    },
  );
  const gateway = await startGatewayProcess(config, join(work, `${name}.json`));
  gateways.push(gateway);
  return gateway;
}

async function untilExecution(check: (record: ExecutionRecord) => void): Promise<ExecutionRecord> {
  let found: ExecutionRecord | undefined;
  await vi.waitFor(async () => {
    const records = await store.list({ tool: 'hold_task' });
    expect(records).toHaveLength(1);
    found = records[0] as ExecutionRecord;
    check(found);
  }, PATIENTLY);
  return found as ExecutionRecord;
}

describe('a PostgreSQL fleet', () => {
  it('the holder following an upstream task is SIGKILLed: another gateway of the fleet follows it to its end', async () => {
    const [holder, survivor] = await Promise.all([startGateway('gw-holder'), startGateway('gw-survivor')]);
    store = await openStore({ kind: 'postgres', url: pg.url });
    const agent = modernTasksClient(holder.url, { clientName: 'fleet-agent' });
    const taskId = createdTaskId(await agent.call('call-1', 'hold_task', { key: 'fleet-k1' }));
    const followed = await untilExecution((r) =>
      expect(r).toMatchObject({ state: 'dispatched', upstreamTask: { upstream: 'remote' } }),
    );

    await holder.kill('SIGKILL');
    const resumed = await untilExecution((r) => {
      expect(r.state).toBe('dispatched');
      expect(r.leaseOwner).not.toBe(followed.leaseOwner);
    });
    const journal = await store.journalFor(resumed.id);
    expect(journal.filter((e) => e.kind === 'upstream_task_resumed')).toHaveLength(1);

    await upstream.release('fleet-k1');
    const other = modernTasksClient(survivor.url, { clientName: 'fleet-agent' });
    const done = await untilTaskStatus(other, taskId, 'completed');
    expect(textOf(done.result)).toBe('held fleet-k1');
    const record = await untilExecution((r) => expect(r.state).toBe('completed'));
    expect(textOf(record.outcome?.result)).toBe('held fleet-k1');
    expect(upstream.calls).toEqual(['fleet-k1']);
    const kinds = (await store.journalFor(record.id)).map((e) => e.kind);
    expect(kinds.filter((k) => k === 'dispatched')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'upstream_task_resumed')).toHaveLength(1);
  }, 150_000);
});
