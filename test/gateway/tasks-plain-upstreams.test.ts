/**
 * Idem's tasks in front of the servers people actually run (issue 43): `idem gateway` as its own
 * process, a 2026-07-28 client that can take tasks, and a plain upstream of each SDK generation —
 * the v1 SDK's low-level `Server` (2025-era: it pushes `elicitation/create` while a call runs,
 * answers JSON-RPC errors, refuses a `task` param) and the v2 one the conformance suite uses
 * (2026-07-28: `input_required` rounds). The upstreams count on the far side what they did
 * (test/conformance/charges.ts); every wait is on a condition.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { META } from '../../src/executions/answers.js';
import { TASKS_EXTENSION } from '../../src/protocol/tasks.js';
import { askedOf, cancelsOf, chargesOf } from '../conformance/charges.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { createdTaskId } from '../support/modern-tasks.js';
import { REPO_ROOT } from '../support/node22.js';
import {
  askedKeys,
  GENERATIONS,
  type Generation,
  type PlainTasksGateway,
  plainUpstream,
  release,
  resultOf,
  settled,
  startPlainTasksGateway,
  storedText,
  taskWhen,
} from '../support/plain-tasks.js';
import { RACES, runRace } from '../support/task-races.js';
import { removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { waitUntil } from '../support/wait.js';
import { readRuns } from './fixtures/task-server.js';

/** `task_after` of the tool whose question comes before its call became a task. */
const TASK_AFTER_MS = 200;

/** A client whose user can be asked (a 2026-07-28 upstream asks only such a request). */
const ASKABLE = { elicitation: true };

/** Rounds of each race here; scripts/task-races.ts runs twenty. */
const RACE_ROUNDS = 2;

afterAll(removeTemporaries);

for (const generation of GENERATIONS) plainUpstreamSuite(generation, 'stdio');
// Over HTTP a pushed question rides its call's own response stream: that is how it is told apart.
plainUpstreamSuite('v1', 'http');

function plainUpstreamSuite(generation: Generation, transport: 'stdio' | 'http'): void {
  describe(`in front of a plain upstream on the ${generation} SDK, over ${transport}`, () => {
    let g: PlainTasksGateway;
    const key = (name: string) => `${generation}-${transport}-${name}`;
    const charges = (name: string) => chargesOf(g.counts, key(name));

    beforeAll(async () => {
      // The v1 one also has an upstream whose own tools run as tasks (2025-11-25): item 7.
      g = await startPlainTasksGateway(
        generation,
        generation === 'v1'
          ? {
              http: transport === 'http',
              upstreams: (counts) => ({
                own: taskServerUpstream(counts),
                later: plainUpstream('v1', counts),
              }),
              tools: {
                own__count_task: { replay: 'review', task: 'optional', task_after: '0s' },
                later__ask_then_charge: {
                  replay: 'review',
                  task: 'optional',
                  task_after: `${TASK_AFTER_MS}ms`,
                },
              },
            }
          : {},
      );
    }, 60_000);
    afterAll(() => g?.close());

    it('1. a tasks/cancel after dispatch is passed on, and the answer the upstream sends all the same is what is stored', async () => {
      const taskId = createdTaskId(
        await g.client.call('cancel-1', 'plain__charge', {
          key: key('cancel-1'),
          release_file: 'cancel-1.go',
        }),
      );
      await waitUntil('the upstream has the call', () => charges('cancel-1') === 1);
      expect(resultOf(await g.client.cancel(taskId))).toMatchObject({ resultType: 'complete' });
      await waitUntil('the upstream is told', () => cancelsOf(g.counts, key('cancel-1')) === 1);
      release(g, 'cancel-1.go');
      const record = await settled(g, taskId);
      expect(record.state).toBe('completed');
      expect(storedText(record)).toBe(`charged ${key('cancel-1')}`);
      const task = resultOf(await g.client.get(taskId));
      expect(task.status).toBe('cancelled');
      expect(task.statusMessage).toContain('ended completed all the same');
    });

    it("1. an upstream that drops its answer once cancelled (as the SDKs do): unknown after the contract's timeout, nothing stored", async () => {
      const taskId = createdTaskId(await g.client.call('drop-1', 'plain__slow_compute', { seconds: 60 }));
      await taskWhen(g, taskId, (t) => t.status === 'working', 'working');
      resultOf(await g.client.cancel(taskId));
      const record = await settled(g, taskId);
      expect(record.state).toBe('unknown');
      expect(record.outcome).toBeNull();
      const task = resultOf(await g.client.get(taskId));
      expect(task.status).toBe('cancelled');
      expect(task.statusMessage).toContain('whether it took effect is not known');
    });

    it('3. an upstream that acted, then answered a JSON-RPC error: unknown, its error kept — and the task working, never failed', async () => {
      const taskId = createdTaskId(
        await g.client.call('fail-1', 'plain__charge_then_fail', { key: key('fail-1') }),
      );
      const record = await settled(g, taskId);
      expect(charges('fail-1')).toBe(1);
      expect(record.state).toBe('unknown');
      expect(record.outcome?.result._meta?.[META.jsonrpcError]).toMatchObject({ code: -32603 });
      const task = resultOf(await g.client.get(taskId));
      expect(task.status).toBe('working');
      expect(task).not.toHaveProperty('error');
      expect(task.statusMessage).toMatch(/JSON-RPC error -32603 .*idem executions resolve/);
    });

    it('2. idem audit verify passes on what those left, and on a plain call answered with a JSON-RPC error', async () => {
      const plain = await g.client.call(
        'fail-2',
        'plain__charge_then_fail',
        { key: key('fail-2') },
        { tasks: false },
      );
      expect(plain.result?.isError).toBe(true);
      expect(charges('fail-2')).toBe(1);
      const verified = await g.verify();
      expect(verified.stdout).toMatch(/OK: \d+ executions match the journal/);
      expect(verified.code).toBe(0);
    });

    it("4. approval asked of the task's client: tasks/update accepts it, and the call runs once", async () => {
      const taskId = createdTaskId(
        await g.client.call('approve-1', 'approved__charge', { key: key('approve-1') }),
      );
      const asked = await taskWhen(g, taskId, (t) => t.status === 'input_required', 'the approval asked');
      expect(askedKeys(asked)).toEqual(['io.idem/approval']);
      expect(charges('approve-1')).toBe(0);
      resultOf(await g.client.update(taskId, { 'io.idem/approval': { action: 'accept' } }));
      const done = await taskWhen(g, taskId, (t) => t.status === 'completed', 'completed');
      expect(textOf(done.result)).toBe(`charged ${key('approve-1')}`);
      expect(charges('approve-1')).toBe(1);
    });

    it("5. what the upstream asks while it works is the task's input: answered with tasks/update, the call goes on", async () => {
      const taskId = createdTaskId(
        await g.client.call('ask-1', 'plain__ask_then_charge', { key: key('ask-1') }, ASKABLE),
      );
      const asked = await taskWhen(g, taskId, (t) => t.status === 'input_required', 'the question asked');
      const [question, ...more] = askedKeys(asked);
      expect(more).toEqual([]);
      expect((asked.inputRequests as Record<string, { method: string }>)[question as string]?.method).toBe(
        'elicitation/create',
      );
      expect(askedOf(g.counts, key('ask-1'))).toBe(1);
      expect(charges('ask-1')).toBe(0);
      resultOf(
        await g.client.update(taskId, {
          [question as string]: { action: 'accept', content: { confirm: true } },
        }),
      );
      const done = await taskWhen(g, taskId, (t) => t.status === 'completed', 'completed');
      expect(textOf(done.result)).toBe(`charged ${key('ask-1')}`);
      expect(charges('ask-1')).toBe(1);
    });

    it('5. two questions at once are two keys; a partial answer leaves the other open', async () => {
      const taskId = createdTaskId(await g.client.call('multi-1', 'plain__multi_input', {}, ASKABLE));
      const asked = await taskWhen(g, taskId, (t) => askedKeys(t).length === 2, 'two questions asked');
      expect(asked.status).toBe('input_required');
      // Keyed by the gateway (v1: pushed requests) or by the upstream (v2): told apart by what each asks.
      const asking = (word: string) =>
        Object.entries(asked.inputRequests as Record<string, { params: { message: string } }>).find(([, r]) =>
          r.params.message.includes(word),
        )?.[0] as string;
      const [first, second] = [asking('first'), asking('second')];
      const answer = (name: string) => ({ action: 'accept', content: { name, confirm: true } });
      resultOf(await g.client.update(taskId, { [first]: answer('one') }));
      const partly = resultOf(await g.client.get(taskId));
      expect(partly.status).toBe('input_required');
      expect(askedKeys(partly)).toEqual([second]);
      resultOf(await g.client.update(taskId, { [second]: answer('two') }));
      const done = await taskWhen(g, taskId, (t) => t.status === 'completed', 'completed');
      expect(textOf(done.result)).toBe('Inputs received: one, two');
    });

    it("6. nothing the gateway answers itself reaches the upstream: a client's task param, the tasks extension, Idem's own _meta", async () => {
      const greeted = await g.client.call(
        'greet-1',
        'plain__greet',
        { name: 'Ada' },
        { params: { task: { ttl: 60_000 } } },
      );
      expect(greeted.error).toBeUndefined();
      expect(textOf(greeted.result)).toBe('Hello, Ada!');
      const echoed = await g.client.call(
        'echo-1',
        'plain__echo_request',
        {},
        {
          meta: { 'io.idem/execution-id': 'exe_the_clients_own', 'io.idem/anything': 1, kept: 'as it came' },
        },
      );
      const seen = textOf(echoed.result) ?? '';
      expect(JSON.parse(seen).meta).toMatchObject({ kept: 'as it came' });
      expect(seen).not.toContain('io.idem/');
      expect(seen).not.toContain(TASKS_EXTENSION);
    });

    if (generation === 'v1')
      it("5. a question asked before the call became a task is the call's own answer: no task is made while its client holds it", async () => {
        const args = { key: key('later-1') };
        const first = resultOf(await g.client.call('later-1', 'later__ask_then_charge', args, ASKABLE));
        expect(first.resultType).toBe('input_required');
        const [question] = Object.keys(first.inputRequests as Record<string, unknown>);
        // Past task_after, with the question still held: a task made now would reach no one.
        const answeredAt = Date.now();
        await waitUntil('task_after has passed', () => Date.now() - answeredAt > 2 * TASK_AFTER_MS);
        const [record] = await g.store.list({ tool: 'later__ask_then_charge' });
        expect(record?.state).toBe('dispatched');
        expect(await g.store.findTask(record?.id as string, record?.actor as string)).toBeUndefined();
        // The answers come with the next call of the round: the same execution goes on, and that call hears its task.
        const next = await g.client.call('later-2', 'later__ask_then_charge', args, {
          ...ASKABLE,
          params: {
            inputResponses: { [question as string]: { action: 'accept', content: { confirm: true } } },
            requestState: first.requestState,
          },
        });
        const taskId = createdTaskId(next);
        const done = await taskWhen(g, taskId, (t) => t.status === 'completed', 'completed');
        expect(textOf(done.result)).toBe(`charged ${key('later-1')}`);
        expect(charges('later-1')).toBe(1);
        expect((await g.executionOf(taskId)).id).toBe(record?.id);
      });

    if (generation === 'v1')
      it("7. the upstream's own task id never reaches the client", async () => {
        const taskId = createdTaskId(
          await g.client.call('own-1', 'own__count_task', { key: key('own-1'), release_file: 'own-1.go' }),
        );
        await waitUntil('the upstream made its task', () =>
          readRuns(g.counts).some((r) => r.key === key('own-1')),
        );
        const upstreamTaskId = readRuns(g.counts).find((r) => r.key === key('own-1'))?.taskId as string;
        const record = await g.executionOf(taskId);
        await waitUntil(
          'its task on the record',
          async () => (await g.store.get(record.id))?.upstreamTask != null,
        );
        const working = resultOf(await g.client.get(taskId));
        expect(working.status).toBe('working');
        expect(JSON.stringify(working)).not.toContain(upstreamTaskId);
        release(g, 'own-1.go');
        const done = await taskWhen(g, taskId, (t) => t.status === 'completed', 'completed');
        expect(JSON.stringify(done)).not.toContain(upstreamTaskId);
        expect(textOf(done.result)).toBe(`counted ${key('own-1')}`);
      });

    it(`races, ${RACE_ROUNDS} rounds each: every stored outcome is the target's answer or unknown, and idem audit verify passes`, async () => {
      for (const race of RACES) {
        const tally = await runRace(g, race, RACE_ROUNDS);
        expect({ race, violations: tally.violations }).toEqual({ race, violations: [] });
        expect(tally.target + tally.unknown + tally.notExecuted).toBe(RACE_ROUNDS);
      }
      const verified = await g.verify();
      expect(verified.code, verified.stdout).toBe(0);
    }, 120_000);
  });
}

/** An upstream whose tools run as tasks of their own (2025-11-25), recording its runs into `counts`. */
function taskServerUpstream(counts: string): { command: string; args: string[]; cwd: string } {
  return {
    command: process.execPath,
    args: [...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/task-server.ts')), '--dir', counts],
    cwd: REPO_ROOT,
  };
}
