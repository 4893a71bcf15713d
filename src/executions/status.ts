import { IDEM_CODES, StoreUnavailableError } from '../errors.js';
import type { JsonValue } from '../identity/canonical.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionRecord } from '../store/types.js';
import { idemAnswer, META } from './answers.js';
import { isStale } from './leases.js';
import { answerOfRecord } from './record-answer.js';
import { expire, probe } from './recovery.js';
import type { StepContext } from './step-context.js';

/**
 * The status tool's answer for `ref`, as seen by `actor`. A stale dispatch is
 * turned into `unknown` here too, and a status probe is tried if the tool has one.
 */
export async function status(ctx: StepContext, ref: string, actor: string): Promise<ToolResult> {
  let record: ExecutionRecord | undefined;
  try {
    record = await ctx.store.get(ref);
  } catch (error) {
    if (error instanceof StoreUnavailableError) {
      return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
        ref,
        detail: 'The store cannot be read right now.',
      });
    }
    throw error;
  }
  // Another actor's execution is not theirs to see: answer as if it did not exist.
  if (!record || record.actor !== actor) return idemAnswer(IDEM_CODES.IDEM_UNKNOWN_EXECUTION, { ref });
  // Handing the stored result to the agent here is a delivery too.
  const answer = await answerOfRecord(ctx, await current(ctx, record), true);
  const action = await actionOf(ctx, ref);
  // The caller's task of it, if the execution is one: the id its tasks/get names it by.
  const task = await ctx.store.findTask(ref, actor).catch(() => undefined);
  const meta = {
    ...answer._meta,
    ...(action ? { [META.action]: action } : {}),
    ...(task ? { [META.taskId]: task.taskId } : {}),
  };
  return action || task ? { ...answer, _meta: meta } : answer;
}

/** Channel, target and credential name, as the execution's `accepted` event recorded them (see actionRecord). */
async function actionOf(ctx: StepContext, ref: string): Promise<Record<string, JsonValue> | undefined> {
  const timeline = await ctx.store.journalFor(ref).catch(() => []);
  const accepted = timeline.find((e) => e.kind === 'accepted' && typeof e.detail.channel === 'string');
  if (!accepted) return undefined;
  const { channel, target, credential } = accepted.detail;
  return { channel: channel ?? null, target: target ?? null, credential: credential ?? null };
}

/** A stale dispatch is `unknown` by now; an unknown one is probed, if its tool has a status probe. */
export async function current(ctx: StepContext, record: ExecutionRecord): Promise<ExecutionRecord> {
  let current = record;
  // Its outcome held here (late-outcome.ts) is written first: that is what happened.
  if (['dispatched', 'unknown'].includes(current.state) && (await ctx.lateOutcomes.writeNow(current.id)))
    current = (await ctx.store.get(current.id)) ?? current;
  if (current.state === 'dispatched' && isStale(current)) current = (await expire(ctx, current)) ?? current;
  if (current.state === 'unknown') current = (await probe(ctx, current)) ?? current;
  return current;
}
