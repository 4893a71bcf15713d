/**
 * A gateway SIGKILLed while it follows an upstream's own task, and a new gateway process on the
 * same data directory: the new one takes the execution over (journaled `upstream_task_resumed`)
 * and follows the same task again — nothing sent to the upstream again.
 * - An HTTP upstream that keeps its tasks (fixtures/keeping-task-server.ts, in this process): the
 *   execution ends with the upstream's real result, when the upstream ended it; one tools/call
 *   reached it; the client's own Idem task answers from it.
 * - A stdio upstream, whose tasks die with the process the killed gateway ran
 *   (fixtures/task-server.ts): the new gateway's upstream no longer knows the task, and the
 *   outcome is `unknown`, saying so — never dispatched again.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { ActivityEntry } from '../../src/journal/events.js';
import { openStore } from '../../src/store/index.js';
import type { ExecutionRecord, ExecutionStore } from '../../src/store/types.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { createdTaskId, modernTasksClient, untilTaskStatus } from '../support/modern-tasks.js';
import { REPO_ROOT } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';
import { type KeepingTaskServer, startKeepingTaskServer } from './fixtures/keeping-task-server.js';
import { runsOf } from './fixtures/task-server.js';

const processes: GatewayProcess[] = [];
const open: { close(): Promise<void> }[] = [];
/** Hold files to write at the end: a killed gateway's orphaned stdio upstream then ends its held task, and exits. */
const holds: string[] = [];
afterEach(async () => {
  for (const gateway of processes.splice(0)) await gateway.kill('SIGKILL');
  for (const item of open.splice(0).reverse()) await item.close().catch(() => {});
});
afterAll(() => {
  for (const file of holds) writeFileSync(file, '');
  removeTemporaries();
});

/** Short leases, so that a dead holder's lapses soon after the kill; a pass every second. */
const TOOL = { replay: 'review', task: 'optional', task_after: '0s', lease: '1s', timeout: '60s' };

async function startGateway(config: Record<string, unknown>, dir: string): Promise<GatewayProcess> {
  const gateway = await startGatewayProcess(config, join(dir, 'idem.json'));
  processes.push(gateway);
  return gateway;
}

async function storeOf(dir: string): Promise<ExecutionStore> {
  const store = await openStore({ kind: 'sqlite', path: join(dir, 'data', 'idem.db') });
  open.push(store);
  return store;
}

/** The one execution of `tool`, once `check` holds for it. */
async function untilExecution(
  store: ExecutionStore,
  tool: string,
  check: (record: ExecutionRecord) => void,
): Promise<ExecutionRecord> {
  let found: ExecutionRecord | undefined;
  await vi.waitFor(async () => {
    const records = await store.list({ tool });
    expect(records).toHaveLength(1);
    found = records[0] as ExecutionRecord;
    check(found);
  }, PATIENTLY);
  return found as ExecutionRecord;
}

const kindsOf = (journal: ActivityEntry[]) => journal.map((e) => e.kind);

// Two gateway processes (tsx compiles each at start): slow on a loaded machine.
describe('following an upstream task again after the gateway was SIGKILLed', { timeout: 150_000 }, () => {
  it('an HTTP upstream that kept the task: the new gateway follows it to its real end, one tools/call, and the client’s task answers from it', async () => {
    const dir = freshDir('resume-http');
    const upstream: KeepingTaskServer = await startKeepingTaskServer();
    open.push(upstream);
    const config = {
      data_dir: join(dir, 'data'),
      sweep_interval: '1s',
      upstreams: { remote: { url: upstream.url } },
      tools: { hold_task: TOOL },
    };
    const first = await startGateway(config, dir);
    const before = modernTasksClient(first.url, { clientName: 'resuming-agent' });
    const taskId = createdTaskId(await before.call('call-1', 'hold_task', { key: 'k1' }));
    const store = await storeOf(dir);
    // The upstream's task is on the record: the gateway follows it.
    const followed = await untilExecution(store, 'hold_task', (r) =>
      expect(r).toMatchObject({
        state: 'dispatched',
        upstreamTask: { generation: 'v1', upstream: 'remote' },
      }),
    );
    expect(upstream.calls).toEqual(['k1']);

    await first.kill('SIGKILL');
    const second = await startGateway(config, dir);
    // Taken over by the new gateway, which follows the same task: still in flight.
    const resumed = await untilExecution(store, 'hold_task', (r) => {
      expect(r.state).toBe('dispatched');
      expect(r.leaseOwner).not.toBe(followed.leaseOwner);
    });
    expect(resumed.upstreamTask).toEqual(followed.upstreamTask);
    const after = modernTasksClient(second.url, { clientName: 'resuming-agent' });
    expect((await after.get(taskId)).result).toMatchObject({ taskId, status: 'working' });

    const releasedAt = Date.now();
    await upstream.release('k1');
    const done = await untilTaskStatus(after, taskId, 'completed');
    expect(textOf(done.result)).toBe('held k1');
    const record = await untilExecution(store, 'hold_task', (r) => expect(r.state).toBe('completed'));
    expect(textOf(record.outcome?.result)).toBe('held k1');
    expect(record.updatedAt).toBeGreaterThanOrEqual(releasedAt);
    // One tools/call, ever: the new gateway only asked after the task.
    expect(upstream.calls).toEqual(['k1']);

    const journal = await store.journalFor(record.id);
    const kinds = kindsOf(journal);
    expect(kinds.filter((k) => k === 'dispatched')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'upstream_task_resumed')).toHaveLength(1);
    const resumedEvent = journal.find((e) => e.kind === 'upstream_task_resumed');
    expect(resumedEvent?.detail).toMatchObject({
      upstream: 'remote',
      upstreamTaskId: followed.upstreamTask?.taskId,
      owner: resumed.leaseOwner,
    });
    expect(['dispatched', 'unknown']).toContain(resumedEvent?.detail.from);
    const outcome = journal.findLast((e) => e.kind === 'outcome');
    expect(outcome?.detail).toMatchObject({ state: 'completed', resumed: true });
    expect(outcome?.at).toBeGreaterThanOrEqual(releasedAt);
    expect(outcome?.seq).toBeGreaterThan(resumedEvent?.seq ?? Number.POSITIVE_INFINITY);
  });

  it('a gateway stopped (SIGTERM) while it follows leaves the task to the next one: the real result, one tools/call', async () => {
    const dir = freshDir('resume-stop');
    const upstream: KeepingTaskServer = await startKeepingTaskServer();
    open.push(upstream);
    const config = {
      data_dir: join(dir, 'data'),
      sweep_interval: '1s',
      upstreams: { remote: { url: upstream.url } },
      tools: { hold_task: TOOL },
    };
    const first = await startGateway(config, dir);
    const agent = modernTasksClient(first.url, { clientName: 'stopping-agent' });
    const taskId = createdTaskId(await agent.call('call-1', 'hold_task', { key: 's1' }));
    const store = await storeOf(dir);
    const followed = await untilExecution(store, 'hold_task', (r) =>
      expect(r).toMatchObject({ state: 'dispatched', upstreamTask: { upstream: 'remote' } }),
    );

    // A graceful stop closes the connection the task was followed on: that is no outcome.
    await first.kill('SIGTERM');
    expect((await store.get(followed.id))?.state).toBe('dispatched');
    const second = await startGateway(config, dir);
    await untilExecution(store, 'hold_task', (r) => {
      expect(r.state).toBe('dispatched');
      expect(r.leaseOwner).not.toBe(followed.leaseOwner);
    });
    await upstream.release('s1');
    const after = modernTasksClient(second.url, { clientName: 'stopping-agent' });
    expect(textOf((await untilTaskStatus(after, taskId, 'completed')).result)).toBe('held s1');
    expect(upstream.calls).toEqual(['s1']);
    const kinds = kindsOf(await store.journalFor(followed.id));
    expect(kinds.filter((k) => k === 'outcome')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'upstream_task_resumed')).toHaveLength(1);
  });

  it('a stdio upstream restarted with the gateway no longer knows the task: unknown, saying so, never dispatched again', async () => {
    const dir = freshDir('resume-stdio');
    const runs = join(dir, 'runs');
    mkdirSync(runs);
    holds.push(join(runs, 'release-f1'));
    const config = {
      data_dir: join(dir, 'data'),
      sweep_interval: '1s',
      upstreams: {
        tasks: {
          command: process.execPath,
          args: [...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/task-server.ts')), '--dir', runs],
          cwd: REPO_ROOT,
        },
      },
      tools: { count_task: TOOL },
    };
    const args = { key: 'f1', release_file: 'release-f1' };
    const first = await startGateway(config, dir);
    const before = modernTasksClient(first.url, { clientName: 'forgetting-agent' });
    const taskId = createdTaskId(await before.call('call-1', 'count_task', args));
    const store = await storeOf(dir);
    const followed = await untilExecution(store, 'count_task', (r) =>
      expect(r).toMatchObject({ state: 'dispatched', upstreamTask: { upstream: 'tasks' } }),
    );
    expect(runsOf(runs, 'count_task', 'f1')).toBe(1);

    await first.kill('SIGKILL');
    const second = await startGateway(config, dir);
    const record = await untilExecution(store, 'count_task', (r) => {
      expect(r.state).toBe('unknown');
      expect(r.leaseExpiresAt).toBeNull();
    });
    expect(record.outcome).toBeNull();
    const journal = await store.journalFor(record.id);
    expect(kindsOf(journal)).toContain('upstream_task_resumed');
    const outcome = journal.findLast((e) => e.kind === 'outcome');
    expect(outcome?.detail).toMatchObject({ state: 'unknown', resumed: true });
    // Its id is the journal's (upstream_task), never in a text a client may read.
    expect(outcome?.detail.why).toContain('the upstream no longer knows its task (');
    expect(outcome?.detail.why).not.toContain(followed.upstreamTask?.taskId);
    // The client's task says so honestly: working, an operator must review it.
    const after = modernTasksClient(second.url, { clientName: 'forgetting-agent' });
    const task = (await after.get(taskId)).result;
    expect(task).toMatchObject({ taskId, status: 'working' });
    expect(task?.statusMessage).toMatch(/not known: an operator must review it/);
    // Never sent again: the run the killed gateway made is the only one, and the journal has one dispatch.
    expect(runsOf(runs, 'count_task', 'f1')).toBe(1);
    expect(kindsOf(journal).filter((k) => k === 'dispatched')).toHaveLength(1);
  });
});
