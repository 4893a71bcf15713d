/**
 * Races an operator or a client causes on a task, through the gateway in front of a plain
 * upstream (plain-tasks.ts), each round started by conditions — never a sleep — and then left to
 * race: the two contenders are sent together, and whichever lands first decides.
 *
 * - cancel vs answer: the upstream has the call (charged), and is released to answer while the
 *   client cancels the task;
 * - approve vs cancel: the task waits for approval (`input_required`), and the client approves
 *   and cancels it;
 * - cancel vs input: the upstream asked a question (the task is `input_required`), and the client
 *   answers and cancels it.
 *
 * Each round's execution, once settled, is one of: the target's own answer stored, `unknown`
 * (nothing stored, or only what the target answered), or retired as not executed (nothing sent,
 * nothing charged). Anything else — an answer the target never sent, a charge where nothing was
 * to run — is a violation, named. The tests run a few rounds (tasks-plain-upstreams.test.ts),
 * scripts/task-races.ts twenty.
 */
import { META } from '../../src/executions/answers.js';
import type { ExecutionRecord } from '../../src/store/types.js';
import { cancelsOf, chargesOf } from '../conformance/charges.js';
import { createdTaskId } from './modern-tasks.js';
import {
  askedKeys,
  type PlainTasksGateway,
  release,
  resultOf,
  settled,
  storedText,
  taskWhen,
} from './plain-tasks.js';
import { waitUntil } from './wait.js';

export const RACES = ['cancel_vs_answer', 'approve_vs_cancel', 'cancel_vs_input'] as const;
export type Race = (typeof RACES)[number];

/** How a round's execution ended. */
export type Ending = 'target' | 'unknown' | 'not_executed';

export interface Tally {
  rounds: number;
  target: number;
  unknown: number;
  notExecuted: number;
  /** Rounds whose upstream charged (once: twice is a violation). */
  charged: number;
  /** What a round did that it must not: empty when every round held. */
  violations: string[];
}

export async function runRace(gateway: PlainTasksGateway, race: Race, rounds: number): Promise<Tally> {
  const tally: Tally = { rounds: 0, target: 0, unknown: 0, notExecuted: 0, charged: 0, violations: [] };
  for (let round = 1; round <= rounds; round++) {
    const key = `${gateway.generation}-${race}-${round}`;
    const { record, problem } = await ROUNDS[race](gateway, key, round % 2 === 0);
    const judged = judge(gateway, key, record);
    tally.rounds++;
    if (chargesOf(gateway.counts, key) > 0) tally.charged++;
    if (problem ?? judged.problem) tally.violations.push(`${key}: ${problem ?? judged.problem}`);
    if (judged.ending === 'target') tally.target++;
    else if (judged.ending === 'unknown') tally.unknown++;
    else tally.notExecuted++;
  }
  return tally;
}

/**
 * One round: `key` names it; `together` sends the two contenders at once (even rounds), else the
 * second goes once a condition shows the first has landed (odd rounds) — so each race also meets
 * the order it would take on a slow network, decided by a condition, not a delay.
 */
type Round = (
  g: PlainTasksGateway,
  key: string,
  together: boolean,
) => Promise<{ record: ExecutionRecord; problem?: string }>;

const ROUNDS: Record<Race, Round> = {
  async cancel_vs_answer(g, key, together) {
    const go = `${key}.go`;
    const taskId = createdTaskId(
      await g.client.call(`${key}-call`, 'plain__charge', { key, release_file: go }),
    );
    await waitUntil(`${key} charged`, () => chargesOf(g.counts, key) === 1);
    if (together) {
      const [cancelled] = await Promise.all([g.client.cancel(taskId), Promise.resolve(release(g, go))]);
      resultOf(cancelled);
    } else {
      // The cancel first, heard by the upstream; then it answers all the same.
      resultOf(await g.client.cancel(taskId));
      await waitUntil(`${key}: the upstream told`, () => cancelsOf(g.counts, key) === 1);
      release(g, go);
    }
    return { record: await settled(g, taskId) };
  },
  async approve_vs_cancel(g, key, together) {
    const go = `${key}.go`;
    const taskId = createdTaskId(
      await g.client.call(`${key}-call`, 'approved__charge', { key, release_file: go }),
    );
    await taskWhen(g, taskId, (t) => t.status === 'input_required', 'the approval asked');
    const approve = () => g.client.update(taskId, { 'io.idem/approval': { action: 'accept' } });
    if (together) {
      const [approved, cancelled] = await Promise.all([approve(), g.client.cancel(taskId)]);
      resultOf(approved);
      resultOf(cancelled);
    } else {
      // Approved and sent (the upstream has the call), then cancelled before it answers.
      resultOf(await approve());
      await waitUntil(`${key} charged`, () => chargesOf(g.counts, key) === 1);
      resultOf(await g.client.cancel(taskId));
    }
    release(g, go);
    return { record: await settled(g, taskId) };
  },
  async cancel_vs_input(g, key, together) {
    const go = `${key}.go`;
    const taskId = createdTaskId(
      await g.client.call(
        `${key}-call`,
        'plain__ask_then_charge',
        { key, release_file: go },
        { elicitation: true },
      ),
    );
    const asked = await taskWhen(g, taskId, (t) => t.status === 'input_required', 'the question asked');
    const answers = Object.fromEntries(
      askedKeys(asked).map((k) => [k, { action: 'accept', content: { confirm: true } }]),
    );
    if (together) {
      const [answered, cancelled] = await Promise.all([
        g.client.update(taskId, answers),
        g.client.cancel(taskId),
      ]);
      resultOf(answered);
      resultOf(cancelled);
    } else {
      // Answered, and the upstream goes on (charged), then cancelled before it answers.
      resultOf(await g.client.update(taskId, answers));
      await waitUntil(`${key} charged`, () => chargesOf(g.counts, key) === 1);
      resultOf(await g.client.cancel(taskId));
    }
    release(g, go);
    return { record: await settled(g, taskId) };
  },
};

/** What the target of these rounds can answer for `key`. */
const targetSays = (key: string) => [
  `charged ${key}`,
  `not charged ${key} (accept)`,
  `not charged ${key} (cancel)`,
];

/** How a settled execution ended, and what is wrong with it, if anything. */
function judge(
  g: PlainTasksGateway,
  key: string,
  record: ExecutionRecord,
): { ending: Ending; problem?: string } {
  const charges = chargesOf(g.counts, key);
  const text = storedText(record);
  const jsonrpcError = record.outcome?.result._meta?.[META.jsonrpcError];
  if (charges > 1) return { ending: 'target', problem: `charged ${charges} times` };
  if (record.state === 'completed') {
    if (!text || !targetSays(key).includes(text)) return { ending: 'target', problem: `stored "${text}"` };
    if ((text === `charged ${key}`) !== (charges === 1))
      return { ending: 'target', problem: `stored "${text}" with ${charges} charges` };
    return { ending: 'target' };
  }
  if (record.state === 'unknown') {
    // Nothing stored, or only what the target answered (a JSON-RPC error of its own): never one made up here.
    if (record.outcome && !jsonrpcError)
      return { ending: 'unknown', problem: `unknown with "${text}" stored` };
    if (jsonrpcError && (jsonrpcError as { code?: unknown }).code === -32800)
      return { ending: 'unknown', problem: 'unknown with a "Request cancelled" the target never sent' };
    return { ending: 'unknown' };
  }
  if (record.state === 'failed' && record.outcome === null && charges === 0)
    return { ending: 'not_executed' };
  if (record.state === 'failed' && storedNotExecuted(record) && charges === 0)
    return { ending: 'not_executed' };
  return { ending: 'target', problem: `ended ${record.state} with "${text}" and ${charges} charges` };
}

/** Idem's own "not executed" answer, stored on an execution retired before its target acted. */
function storedNotExecuted(record: ExecutionRecord): boolean {
  const idem = (record.outcome?.result.structuredContent as { idem?: { code?: string } } | undefined)?.idem;
  return idem?.code === 'IDEM_NOT_EXECUTED';
}
