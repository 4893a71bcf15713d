import { CONTRACT_DEFAULTS } from '../defaults.js';
import { messageOf, OutcomeUnknownError } from '../errors.js';
import type { ActivityEntry, ActivityEventInput } from '../journal/events.js';
import { stateAfter } from '../journal/rebuild.js';
import { upstreamTaskResumedEvent } from '../journal/task-events.js';
import type { ToolResult } from '../store/outcome.js';
import type { ExecutionRecord, UpstreamTaskHandle } from '../store/types.js';
import { withinDepth } from '../support/json-depth.js';
import { META } from './answers.js';
import { newToken } from './ids.js';
import type { StepContext } from './step-context.js';
import { watchTaskCancel } from './task-watch.js';

/**
 * Following an upstream's task again after its holder was lost (a gateway killed, or gone from a
 * fleet): a gateway finds the executions whose follower is gone (`resumable`), takes each over
 * with one compare-and-set on the lease it read (of any number of gateways, one wins), and
 * follows the same task to its end — nothing is sent to the upstream again but `tasks/get` (and
 * `tasks/result`). The outcome is recorded as a dispatch's is; an upstream that no longer knows
 * the task, or is not configured any more, leaves it `unknown`, saying why.
 */

/** Follows an upstream's task again; the gateway provides one per upstream (dispatch/mcp). */
export interface UpstreamTaskFollower {
  /**
   * Follows the task to its end: the tool's result (an `isError` one included). Throws
   * OutcomeUnknownError when nothing can say how it ended (the upstream no longer knows the task,
   * the connection was lost). `signal`: the task's client cancelled; the upstream is asked to cancel.
   */
  follow(
    handle: UpstreamTaskHandle,
    options: { signal: AbortSignal; inputDeadlineAt?: number },
  ): Promise<ToolResult>;
}

/**
 * The follower for the task's upstream (`handle.upstream`, its configured name); undefined when
 * none of that name is configured (any more). Throws when it cannot be reached now: the
 * execution is left as it is, for a later pass.
 */
export type UpstreamTaskFollowers = (handle: UpstreamTaskHandle) => Promise<UpstreamTaskFollower | undefined>;

/** What a caller's wait ended with while its dispatch went on (record-outcome.ts): the follower was still at work. */
const WAIT_ENDED: ReadonlySet<unknown> = new Set(['timeout', 'cancelled']);
/** At most this many candidates a pass looks at (the oldest beyond wait for the next pass). */
const PER_PASS = 500;

/**
 * The one rule of which executions may be taken over to follow their upstream's task again: one
 * whose upstream task is recorded, with no outcome, whose holder's lease lapsed (by the store's
 * clock when read; a dispatch deadline that passed is no lapse — its holder may still follow), and
 * - `dispatched`: the holder died while it followed; or
 * - `unknown` made so while the follower was still at work, which then died: its last change of
 *   state is a lapsed lease (`lease_expired`, from a sweep or a call that found it), or the
 *   caller's wait that ended first (`outcome` unknown for `timeout` or `cancelled`).
 * An `unknown` the follower itself concluded (the upstream forgot the task, cancelled it, answered
 * with an error; the connection was lost), an operator's resolution, or a probe's answer is never
 * taken up again. `timeline` is the execution's journal (only read for an `unknown` one).
 */
export function resumable(
  record: ExecutionRecord,
  timeline: readonly Pick<ActivityEntry, 'kind' | 'detail'>[],
): boolean {
  if (!holderLost(record)) return false;
  if (record.state === 'dispatched') return true;
  const last = timeline.findLast((entry) => stateAfter(entry, undefined) !== undefined);
  if (last?.kind === 'lease_expired') return true;
  return last?.kind === 'outcome' && last.detail.state === 'unknown' && WAIT_ENDED.has(last.detail.reason);
}

/** The part of the rule the record alone answers: it follows an upstream task, has no outcome, and its lease lapsed. */
function holderLost(record: ExecutionRecord): boolean {
  if (!record.upstreamTask || record.outcome !== null) return false;
  if (record.state !== 'dispatched' && record.state !== 'unknown') return false;
  return record.leaseExpiresAt !== null && record.leaseExpiresAt <= record.readAt;
}

/** How a resumed following ended: the outcome to record. */
interface Ended {
  state: 'completed' | 'failed' | 'unknown';
  result?: ToolResult;
  /** Why it is unknown. */
  why?: string;
}

/** This process's resumed followings: started by each pass, settled before the store closes. */
export class Resumptions {
  readonly #ctx: StepContext;
  readonly #following = new Map<string, Promise<void>>();

  constructor(ctx: StepContext) {
    this.#ctx = ctx;
  }

  /** One pass: takes over what `resumable` allows and starts following it. The ids taken over. */
  async pass(followers: UpstreamTaskFollowers): Promise<string[]> {
    if (this.#ctx.closing.value) return [];
    const { store } = this.#ctx;
    const candidates = await store.list({
      state: ['dispatched', 'unknown'],
      upstreamTask: true,
      limit: PER_PASS,
    });
    const taken: string[] = [];
    for (const record of candidates) {
      if (this.#ctx.closing.value) break;
      if (this.#following.has(record.id) || !holderLost(record)) continue;
      const timeline = record.state === 'unknown' ? await store.journalFor(record.id) : [];
      if (!resumable(record, timeline)) continue;
      if (await this.#resume(record, followers)) taken.push(record.id);
    }
    return taken;
  }

  /** Every following under way has ended (and what it learned is recorded). */
  async settled(): Promise<void> {
    // A takeover under way when closing began may still add one.
    while (this.#following.size > 0) await Promise.all([...this.#following.values()]);
  }

  async #resume(record: ExecutionRecord, followers: UpstreamTaskFollowers): Promise<boolean> {
    const { store, owner, logger } = this.#ctx;
    const handle = record.upstreamTask as UpstreamTaskHandle;
    let follower: UpstreamTaskFollower | undefined;
    try {
      follower = await followers(handle);
    } catch (error) {
      logger.warn('an upstream task cannot be followed again yet: its upstream cannot be reached', {
        ref: record.id,
        upstream: handle.upstream,
        error: messageOf(error),
      });
      return false;
    }
    const from = record.state as 'dispatched' | 'unknown';
    const subject = { executionId: record.id, actor: record.actor, tool: record.tool };
    const token = newToken();
    const leaseMs = this.#ctx.contracts.get(record.tool)?.leaseMs ?? CONTRACT_DEFAULTS.leaseMs;
    // One write decides who follows: the lease must still be the lapsed one this process read.
    const taken = await store.transition({
      id: record.id,
      from: [from],
      to: 'dispatched',
      requireStale: true,
      leaseExpiresAt: record.leaseExpiresAt,
      holder: { token, owner, leaseMs },
      events: [upstreamTaskResumedEvent(subject, handle, from, owner)],
    });
    if (!taken) return false;
    if (!follower) {
      await this.#record(taken, token, {
        state: 'unknown',
        why: `the upstream "${handle.upstream}" that ran its task ${handle.taskId} is not configured any more, so the task cannot be followed; whether it acted is unknown`,
      });
      return true;
    }
    const following = this.#follow(taken, token, handle, follower, leaseMs).finally(() =>
      this.#following.delete(record.id),
    );
    this.#following.set(record.id, following);
    return true;
  }

  /** Follows to the end, renewing the lease, and records the outcome; settles on every path. */
  async #follow(
    record: ExecutionRecord,
    token: string,
    handle: UpstreamTaskHandle,
    follower: UpstreamTaskFollower,
    leaseMs: number,
  ): Promise<void> {
    const { store, logger, knownSecrets, taskCancels } = this.#ctx;
    const renewal = setInterval(
      () => {
        store.renewLease(record.id, token, leaseMs).then(
          (kept) => {
            if (!kept) logger.warn('the resumed upstream task is no longer held here', { ref: record.id });
          },
          (error) => logger.warn('lease renewal failed', { ref: record.id, error: String(error) }),
        );
      },
      Math.max(10, Math.floor(leaseMs / 3)),
    );
    renewal.unref();
    // The task's client may cancel it here (tasks/cancel), as it could while its first holder followed.
    const cancel = new AbortController();
    taskCancels.set(record.id, cancel);
    // Or by another gateway of the fleet, whichever its client reaches (task-watch.ts).
    const stopWatching = watchTaskCancel(this.#ctx, record.id, cancel);
    let ended: Ended;
    try {
      const result = knownSecrets.redact(
        withinDepth(
          await follower.follow(handle, {
            signal: cancel.signal,
            ...(record.deadlineAt !== null ? { inputDeadlineAt: record.deadlineAt } : {}),
          }),
        ),
      );
      ended = { state: result.isError ? 'failed' : 'completed', result };
    } catch (error) {
      // Closing: the task runs on; the lease lapses and the next holder (a restarted gateway) follows it.
      if (this.#ctx.closing.value) return;
      ended = unknownEnd(error, (value) => knownSecrets.redact(value));
    } finally {
      clearInterval(renewal);
      stopWatching();
      if (taskCancels.get(record.id) === cancel) taskCancels.delete(record.id);
    }
    await this.#record(record, token, ended);
  }

  /** The outcome's one write, by the holder; a failed write is logged (the lease then lapses, and it is resumed again). */
  async #record(record: ExecutionRecord, token: string, ended: Ended): Promise<void> {
    const events: ActivityEventInput[] = [
      {
        kind: 'outcome',
        executionId: record.id,
        actor: record.actor,
        tool: record.tool,
        detail: { state: ended.state, resumed: true, ...(ended.why ? { why: ended.why } : {}) },
      },
    ];
    if (ended.why)
      this.#ctx.logger.warn(`a resumed upstream task ended unknown: ${ended.why}`, { ref: record.id });
    try {
      const kept = await this.#ctx.store.transition({
        id: record.id,
        from: ['dispatched', 'unknown'],
        to: ended.state,
        token,
        // Nobody follows it any more, whatever it came to.
        holder: null,
        ...(ended.result ? { outcome: { result: ended.result } } : {}),
        events,
      });
      if (!kept)
        this.#ctx.logger.warn('the resumed upstream task ended, but the execution was no longer held here', {
          ref: record.id,
          state: ended.state,
        });
    } catch (error) {
      this.#ctx.logger.error('the outcome of a resumed upstream task could not be recorded', {
        ref: record.id,
        error: String(error),
      });
    }
  }
}

/** An unknown end, as a dispatch's (dispatch.ts): the reason, and the JSON-RPC error the upstream answered with, kept. */
function unknownEnd(error: unknown, scrub: <T>(value: T) => T): Ended {
  const why = scrub(messageOf(error));
  const answered =
    error instanceof OutcomeUnknownError ? error.answeredWith && scrub(error.answeredWith) : undefined;
  if (!answered) return { state: 'unknown', why };
  return {
    state: 'unknown',
    why,
    result: {
      isError: true,
      content: [{ type: 'text', text: answered.message }],
      _meta: { [META.jsonrpcError]: answered },
    },
  };
}
