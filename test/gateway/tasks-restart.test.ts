/**
 * A task whose gateway process is SIGKILLed while the target holds the call, asked about through
 * a new gateway process on the same data directory: the task is still there for its actor, and
 * honest — `working`, saying the outcome is not known and needs a review, never `failed` or
 * `completed` — and the repeat of the same call gets that task again, not a second execution. The
 * counting upstream counts on the far side of both processes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { createdTaskId, modernTasksClient } from '../support/modern-tasks.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';
import { executionsOf, finishedOf } from './fixtures/counting-server.js';

const root = freshDir('tasks-restart');
const counts = join(root, 'counts');
mkdirSync(counts);
const processes: GatewayProcess[] = [];
const ARGS = { key: 'restart-1', hold_file: 'hold-restart' };

afterEach(async () => {
  for (const gateway of processes.splice(0)) await gateway.kill('SIGKILL');
});
afterAll(async () => {
  // The held call ends (its dead gateway's upstream sees the file) before its directory goes.
  writeFileSync(join(counts, ARGS.hold_file), '');
  await vi.waitFor(() => expect(finishedOf(counts, ARGS.key)).toBe(1), PATIENTLY);
  removeTemporaries();
});

const config = {
  data_dir: join(root, 'data'),
  upstreams: { counter: countingUpstream(counts) },
  // A short lease: the dead holder's claim lapses soon after the kill, by the store's clock.
  tools: { count: { replay: 'review', task: 'optional', task_after: '0s', lease: '1s', timeout: '60s' } },
};

async function startGateway(): Promise<GatewayProcess> {
  const gateway = await startGatewayProcess(config, join(root, 'idem.json'));
  processes.push(gateway);
  return gateway;
}

// Two gateway processes (tsx compiles each at start): slow on a loaded machine.
describe('a task whose gateway was SIGKILLed mid-task', { timeout: 150_000 }, () => {
  it('the new gateway answers tasks/get honestly (working, needs review), and a repeat gets the same task: one run', async () => {
    const first = await startGateway();
    const before = modernTasksClient(first.url, { clientName: 'restarting-agent' });
    const created = await before.call('call-1', 'count', ARGS);
    const taskId = createdTaskId(created);
    expect(created.result?.status).toBe('working');
    await vi.waitFor(
      () => expect(executionsOf(counts, ARGS.key), 'the upstream holds the call').toBe(1),
      PATIENTLY,
    );
    expect((await before.get(taskId)).result).toMatchObject({ taskId, status: 'working' });

    await first.kill('SIGKILL');
    const second = await startGateway();
    const after = modernTasksClient(second.url, { clientName: 'restarting-agent' });
    const seen: unknown[] = [];
    // Working while the dead holder's lease runs, then working and saying what must happen.
    await vi.waitFor(async () => {
      const reply = await after.get(taskId);
      seen.push(reply.result?.status ?? reply.error);
      expect(reply.result).toMatchObject({ taskId, status: 'working' });
      expect(reply.result?.statusMessage).toMatch(/not known: an operator must review it/);
    }, PATIENTLY);
    expect(new Set(seen)).toEqual(new Set(['working']));
    const settled = (await after.get(taskId)).result;
    expect(settled).toMatchObject({ resultType: 'complete', taskId, status: 'working' });
    expect(settled).not.toHaveProperty('result');
    expect(settled).not.toHaveProperty('error');
    // It is that actor's task: another client is told no such task exists.
    const stranger = modernTasksClient(second.url, { clientName: 'another-agent' });
    expect((await stranger.get(taskId)).error?.code).toBe(-32602);

    // The same call again (a new request id) to the new gateway: the same task, nothing sent.
    const repeat = await after.call('call-2', 'count', ARGS);
    expect(createdTaskId(repeat)).toBe(taskId);
    expect(repeat.result?.status).toBe('working');
    expect((await after.get(taskId)).result?.status).toBe('working');
    expect(executionsOf(counts, ARGS.key)).toBe(1);
    const store = await openStore({ kind: 'sqlite', path: join(config.data_dir, 'idem.db') });
    try {
      const executions = await store.list({ tool: 'count' });
      expect(executions.map((e) => e.state)).toEqual(['unknown']);
    } finally {
      await store.close();
    }
  });
});
