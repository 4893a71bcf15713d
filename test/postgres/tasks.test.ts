/**
 * Tasks across a fleet: two gateway processes on one PostgreSQL database. A task made through one
 * gateway is answered by the other from the store — while it runs, when it ends, when it is
 * cancelled there (the cancel reaches the gateway that dispatched it), and when its target asks
 * for input, which the other gateway shows and takes. The counting upstream counts every run on
 * the far side of both gateways; a held call (`hold_file`) keeps a task running until the test
 * releases it. The tasks fixture (an upstream with no tasks of its own) asks for input.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fixtureStdioCommand, TASKS_UPSTREAM_PATH } from '../conformance/harness.js';
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
import { fleetMemberConfig } from '../support/postgres-fleet.js';
import { PG_JOURNAL_EVENTS } from '../support/postgres-schemas.js';
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
  return fleetMemberConfig(
    { work, name, url: pg.url, store: { pool: { max: 4, connection_timeout: '60s' } } },
    {
      upstreams: { counter: countingUpstream(counts), tasks: fixtureStdioCommand([], TASKS_UPSTREAM_PATH) },
      // A lease no loaded machine lets lapse while its holder lives: the tasks run to their end.
      tools: {
        count: { replay: 'review', task: 'optional', task_after: '0s', lease: '10s', timeout: '90s' },
        multi_input: { replay: 'review', task: 'optional', task_after: '0s', lease: '10s', timeout: '90s' },
      },
      sweep_interval: '1h',
    },
  );
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
    const taskId = createdTaskId(await viaA.call('fleet-call-1', 'counter__count', args));
    await vi.waitFor(() => expect(executionsOf(counts, args.key)).toBe(1), PATIENTLY);
    expect((await viaB.get(taskId)).result).toMatchObject({ taskId, status: 'working' });

    release(args.hold_file);
    const done = await untilTaskStatus(viaB, taskId, 'completed');
    expect(textOf(done.result)).toBe('fleet-task-1=1');
    expect(done.result).not.toMatchObject({ isError: true });
    expect((await viaA.get(taskId)).result).toMatchObject({ status: 'completed' });
    expect(executionsOf(counts, args.key)).toBe(1);
  });

  it("B's tasks/cancel of A's running task reaches A's dispatch: the upstream is told, and what it answers all the same is the outcome", async () => {
    const args = { key: 'fleet-task-2', hold_file: 'hold-cancelled' };
    const taskId = createdTaskId(await viaA.call('fleet-call-2', 'counter__count', args));
    await vi.waitFor(() => expect(executionsOf(counts, args.key)).toBe(1), PATIENTLY);

    expect(await viaB.cancel(taskId)).toMatchObject({ result: { resultType: 'complete' } });
    // A reads the cancel at the task's poll interval and passes it on (notifications/cancelled to the
    // upstream, which had acted): the task is cancelled, and whether it took effect is not known yet.
    await vi.waitFor(async () => {
      for (const client of [viaA, viaB])
        expect((await client.get(taskId)).result).toMatchObject({
          taskId,
          status: 'cancelled',
          statusMessage: expect.stringMatching(/after it was sent: whether it took effect is not known/),
        });
    }, PATIENTLY);
    // The upstream answers all the same: that answer, the target's own, is what A records.
    release(args.hold_file);
    await vi.waitFor(async () => expect(await stateOf(args.key)).toBe('completed'), PATIENTLY);
    expect(executionsOf(counts, args.key)).toBe(1);
    const { rows } = await pg.admin().query<{ before: string }>(
      `SELECT detail::jsonb->>'before' AS before FROM ${PG_JOURNAL_EVENTS} AS e
         WHERE kind = 'task_cancel' AND detail::jsonb->>'taskId' = $1`,
      [taskId],
    );
    expect(rows).toEqual([{ before: 'outcome' }]);
  });

  it("the input A's upstream asks for shows on B, is answered through B key by key, and the task completes once", async () => {
    const taskId = createdTaskId(
      await viaA.call('fleet-call-3', 'tasks__multi_input', {}, { elicitation: true }),
    );
    const asked = await untilTaskStatus(viaB, taskId, 'input_required');
    expect(Object.keys(asked.inputRequests as object).sort()).toEqual(['first', 'second']);
    expect(
      await viaB.update(taskId, { first: { action: 'accept', content: { name: 'from-b' } } }),
    ).toMatchObject({
      result: { resultType: 'complete' },
    });
    const partly = (await viaA.get(taskId)).result;
    expect(partly).toMatchObject({ status: 'input_required' });
    expect(Object.keys(partly?.inputRequests as object)).toEqual(['second']);
    await viaA.update(taskId, { second: { action: 'accept', content: { name: 'from-a' } } });
    const done = await untilTaskStatus(viaB, taskId, 'completed');
    expect(textOf(done.result)).toBe('Inputs received: from-b, from-a');
    expect((await viaA.get(taskId)).result).toMatchObject({ status: 'completed' });
  });
});
