import { IDEM_CODES, StoreUnavailableError } from '../errors.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionRecord } from '../store/types.js';
import { idemAnswer, idemCodeOf, META, markExecuted } from './answers.js';
import type { Caller, CallIdentity, Rerun, ToolCall } from './call.js';
import { identifiedOrRefused } from './identify.js';
import type { RecentCalls, RepeatableCall } from './recent-calls.js';
import { runSequence, type SequenceParts } from './sequence.js';
import { NOT_YET_DISPATCHED } from './states.js';
import { current, status } from './status.js';
import { callEvent, type StepContext } from './step-context.js';

/** What a deliberate repeat needs: the claim loop, the remembered arguments, and how a call is identified. */
export interface Repeater {
  sequence: SequenceParts;
  /** Arguments of recent calls, in memory only, so that a finished one can be repeated on purpose. */
  recent: RecentCalls;
  identify: (call: ToolCall) => CallIdentity;
}

/** A private copy of what a repeat of `call` needs, and its size; undefined when it cannot be copied. */
export function repeatable(call: ToolCall): { call: RepeatableCall; size: number } | undefined {
  try {
    const size = JSON.stringify(call.arguments ?? {}).length;
    // A clone, not the JSON: a library handler's arguments may hold what JSON cannot (a Date from zod).
    const copy = { tool: call.tool, arguments: structuredClone(call.arguments), actor: call.caller.actor };
    return { call: copy, size };
  } catch {
    // Not cloneable (or not serializable): such a call is not repeated from memory.
    return undefined;
  }
}

/**
 * A deliberate repeat (the status tool's `action: "repeat"`): runs the intent
 * of `ref` again as a NEW execution, journaled as a repeat of it (`repeat`
 * events: `repeat_of` on the new one, `repeated_by` on the old). Only for the
 * actor it belongs to, and only once it has finished: while it runs, awaits
 * approval or has an unknown outcome, a repeat could make it happen twice, and
 * the answer says so. Repeating one ref twice (a lost answer, a resent request)
 * runs it once: the second gets the repeat's own execution.
 */
export async function repeatExecution(
  { sequence, recent, identify }: Repeater,
  ref: string,
  caller: Caller,
  rerun: Rerun,
): Promise<ToolResult> {
  const ctx = sequence.ctx;
  const seen: { record?: ExecutionRecord } = {};
  try {
    const record = await ctx.store.get(ref);
    if (!record || record.actor !== caller.actor)
      return idemAnswer(IDEM_CODES.IDEM_UNKNOWN_EXECUTION, { ref });
    const repeatedAs = await latestRepeat(ctx, record.id);
    if (repeatedAs) return status(ctx, repeatedAs, caller.actor);
    const prior = await current(ctx, record);
    if (prior.state !== 'completed' && prior.state !== 'failed') return repeatRefused(ctx, prior);
    const remembered = recent.get(prior.id);
    const plan = remembered?.actor === caller.actor ? await rerun(remembered) : undefined;
    if (plan === undefined) return await retireForRepeat(ctx, prior, caller);
    if ('answer' in plan) return plan.answer;
    const { call, dispatch } = plan;
    const identity = identifiedOrRefused(() => identify(call));
    if ('refused' in identity) return identity.refused;
    const copy = repeatable(call);
    // Someone else may hold the intent by the time this claims (another repeat, or a newer
    // call): then the usual rules apply.
    const settled = await runSequence(sequence, call, identity, dispatch, {
      // The old execution is retired in the claim itself, so that of two racing repeats one runs.
      replacing: prior.id,
      events: (id) => [
        callEvent('repeat', call, id, { repeat_of: prior.id }),
        callEvent('repeat', call, prior.id, { repeated_by: id }),
      ],
      won: (id) => {
        if (copy) recent.remember(id, copy.call, copy.size);
      },
      seen,
    });
    if (!settled) {
      return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
        detail: 'Too many concurrent changes to this action; the repeat was not started.',
      });
    }
    const { answer, claimed } = settled;
    return claimed !== undefined && answer._meta?.[META.executionId] === claimed && !idemCodeOf(answer)
      ? markExecuted(answer, claimed, prior.id)
      : answer;
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    const last = seen.record;
    if (last && !NOT_YET_DISPATCHED.includes(last.state)) {
      return idemAnswer(IDEM_CODES.IDEM_OUTCOME_UNKNOWN, {
        ref: last.id,
        state: last.state,
        statusTool: ctx.statusTool,
        detail: 'An attempt was sent, and the execution record cannot be read right now.',
      });
    }
    return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
      ref,
      detail: 'The execution record cannot be read or written right now, so nothing was repeated.',
    });
  }
}

/** The newest execution that repeats `id` (following repeats of repeats), if it was repeated. */
export async function latestRepeat(ctx: StepContext, id: string): Promise<string | undefined> {
  let latest: string | undefined;
  let at = id;
  for (let hop = 0; hop < 64; hop++) {
    let next: string | undefined;
    for (const entry of await ctx.store.journalFor(at)) {
      const by = entry.kind === 'repeat' ? entry.detail.repeated_by : undefined;
      if (typeof by === 'string') next = by;
    }
    if (next === undefined) break;
    latest = at = next;
  }
  return latest;
}

/** Why an execution that has not finished is not repeated: its own state's answer, and the reason. */
export function repeatRefused(ctx: StepContext, record: ExecutionRecord): ToolResult {
  const about = { ref: record.id, state: record.state, statusTool: ctx.statusTool };
  switch (record.state) {
    case 'awaiting_approval':
      return idemAnswer(IDEM_CODES.IDEM_AWAITING_APPROVAL, {
        ...about,
        detail: 'It cannot be repeated before it has run.',
      });
    case 'denied':
      return idemAnswer(IDEM_CODES.IDEM_DENIED, {
        ...about,
        detail: `A denied action is not repeated.${record.note ? ` Reason: ${record.note}` : ''}`,
      });
    case 'unknown':
      return idemAnswer(
        record.replay === 'review' ? IDEM_CODES.IDEM_REVIEW_REQUIRED : IDEM_CODES.IDEM_OUTCOME_UNKNOWN,
        {
          ...about,
          detail:
            'A repeat is refused while the outcome is unknown: it may already have happened, and a repeat could make it happen twice.',
        },
      );
    default:
      return idemAnswer(IDEM_CODES.IDEM_IN_FLIGHT, {
        ...about,
        detail:
          'A repeat is refused while it runs, so that it does not happen twice; once it has finished, it can be repeated.',
      });
  }
}

/**
 * This process does not hold the arguments of `record` (another process ran
 * it, or this one restarted): the stored result is retired from matching, so
 * the model's next identical call runs as a new execution.
 */
export async function retireForRepeat(
  ctx: StepContext,
  record: ExecutionRecord,
  caller: Caller,
): Promise<ToolResult> {
  await ctx.store.transition({
    id: record.id,
    from: [record.state],
    to: record.state,
    release: true,
    events: [
      {
        kind: 'repeat',
        executionId: record.id,
        actor: caller.actor,
        tool: record.tool,
        requestRef: caller.requestRef ?? null,
        detail: { released: true },
      },
    ],
  });
  return idemAnswer(IDEM_CODES.IDEM_NOT_EXECUTED, {
    ref: record.id,
    state: record.state,
    detail: `This process does not hold the arguments of ${record.id} (it ran in another process, or before a restart), so it cannot repeat it by itself. Its stored result is retired instead: call ${record.tool} again with the same arguments, and it will run as a new execution.`,
  });
}
