/**
 * Tasks across a fleet: two gateway processes on one PostgreSQL database. A task made through one
 * gateway is answered by the other from the store — while it runs, when it ends, and when it is
 * cancelled there. The counting upstream counts every run on the far side of both gateways; a held
 * call (`hold_file`) keeps a task running until the test releases it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { executionsOf } from '../gateway/fixtures/counting-server.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import {
  createdTaskId,
  type ModernTasksClient,
  modernTasksClient,
  untilTaskStatus,
} from '../support/modern-tasks.js';
import { postgresForTests, type TestPostgres } from '../support/postgres.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';

const work = freshDir('pg-tasks');
const counts = join(work, 'counts');
mkdirSync(counts);
const HOLDS = ['hold-completed', 'hold-cancelled'];
let pg: TestPostgres;
const gateways: GatewayProcess[] = [];
let viaA: ModernTasksClient;
let viaB: ModernTasksClient;

function gatewayConfig(name: string) {
  const dataDir = join(work, name);
  mkdirSync(dataDir, { recursive: true });
  return {
    data_dir: dataDir,
    // One installation: every gateway must fingerprint alike.
    fingerprint_key_file: join(work, 'fingerprint.key'),
    store: { kind: 'postgres', url: pg.url, pool: { max: 4, connection_timeout: '60s' } },
    upstreams: { counter: countingUpstream(counts) },
    // A lease no loaded machine lets lapse while its holder lives: the tasks run to their end.
    tools: { count: { replay: 'review', task: 'optional', task_after: '0s', lease: '10s', timeout: '90s' } },
    sweep_interval: '1h',
  };
}

beforeAll(async () => {
  pg = await postgresForTests();
  for (const name of ['gw-a', 'gw-b'])
    gateways.push(await startGatewayProcess(gatewayConfig(name), join(work, `${name}.json`)));
  // No auth, and the same client name on both: one actor, whichever gateway it reaches.
  [viaA, viaB] = gateways.map((g) => modernTasksClient(g.url, { clientName: 'fleet-agent' })) as [
    ModernTasksClient,
    ModernTasksClient,
  ];
}, 120_000);

afterAll(async () => {
  // Let any held upstream call finish, so no fixture process outlives the run.
  for (const hold of HOLDS) writeFileSync(join(counts, hold), '');
  for (const g of gateways) await g.kill('SIGKILL');
  await pg?.dispose();
  removeTemporaries();
}, 120_000);

const release = (holdFile: string) => writeFileSync(join(counts, holdFile), '');

/** The execution's state in the database, for the call counting `key`. */
async function stateOf(key: string): Promise<string | undefined> {
  const { rows } = await pg
    .admin()
    .query<{ state: string }>(`SELECT state FROM executions WHERE (arguments_preview::jsonb)->>'key' = $1`, [
      key,
    ]);
  return rows[0]?.state;
}

describe('a task made through one gateway of a fleet, asked about through the other', {
  timeout: 120_000,
}, () => {
  it("B answers A's task while it runs, and once A records the outcome, B says completed with the result", async () => {
    const args = { key: 'fleet-task-1', hold_file: 'hold-completed' };
    const taskId = createdTaskId(await viaA.call('fleet-call-1', 'count', args));
    await vi.waitFor(() => expect(executionsOf(counts, args.key)).toBe(1), PATIENTLY);
    expect((await viaB.get(taskId)).result).toMatchObject({ taskId, status: 'working' });

    release(args.hold_file);
    const done = await untilTaskStatus(viaB, taskId, 'completed');
    expect(textOf(done.result)).toBe('fleet-task-1=1');
    expect(done.result).not.toMatchObject({ isError: true });
    expect((await viaA.get(taskId)).result).toMatchObject({ status: 'completed' });
    expect(executionsOf(counts, args.key)).toBe(1);
  });

  it("B's tasks/cancel of A's running task is acknowledged, and the task reads cancelled on both, also after A's dispatch ends", async () => {
    const args = { key: 'fleet-task-2', hold_file: 'hold-cancelled' };
    const taskId = createdTaskId(await viaA.call('fleet-call-2', 'count', args));
    await vi.waitFor(() => expect(executionsOf(counts, args.key)).toBe(1), PATIENTLY);

    expect(await viaB.cancel(taskId)).toMatchObject({ result: { resultType: 'complete' } });
    for (const client of [viaA, viaB])
      expect((await client.get(taskId)).result).toMatchObject({
        taskId,
        status: 'cancelled',
        statusMessage: expect.stringMatching(/after it was sent: whether it took effect is not known/),
      });

    // A held the dispatch, which B cannot abort: it runs to its outcome, which is recorded — and the
    // task, cancelled before that, stays cancelled, saying how the execution ended.
    release(args.hold_file);
    await vi.waitFor(async () => expect(await stateOf(args.key)).toBe('completed'), PATIENTLY);
    for (const client of [viaA, viaB])
      expect((await client.get(taskId)).result).toMatchObject({
        status: 'cancelled',
        statusMessage: expect.stringMatching(/ended completed all the same/),
      });
    expect(executionsOf(counts, args.key)).toBe(1);
  });
});
