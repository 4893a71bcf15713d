import { redactSecrets } from '../identity/redaction.js';
import type { StoredOutcome } from '../store/outcome.js';
import type { ExecutionRecord, ExecutionStore } from '../store/types.js';
import { markExecuted } from './answers.js';
import type { ToolCall } from './call.js';
import type { Done, Sent } from './dispatch.js';
import { callEvent, type Next, type StepContext } from './step-context.js';

/**
 * Records what the dispatch came to. An outcome that came first is recorded as
 * delivered in the same write, and handed to the caller; when the wait ended
 * first, the execution is `unknown` for the caller now, and the outcome, when
 * it comes, is recorded but not delivered.
 */
export async function recordOutcome(
  ctx: StepContext,
  call: ToolCall,
  dispatched: Extract<Next, { step: 'dispatch' }>,
  sent: Sent,
): Promise<Next> {
  const { record, token } = dispatched;
  if (sent.first === 'task') {
    // Answered as a task (sequence.ts → tasks.ts): the execution stays dispatched, and its outcome
    // is recorded when it comes; the task's client reads it from the store.
    ctx.inFlight.track(
      sent.work
        .then((done) => recordDone(ctx, call, record, token, done, sent.secrets, false))
        .catch(() => {}),
      call,
    );
    return { step: 'answer', record };
  }
  if (sent.first !== 'outcome') {
    // The outcome is recorded whenever it arrives; nobody waits for it but a closing process.
    ctx.inFlight.track(
      sent.work
        .then((done) => recordDone(ctx, call, record, token, done, sent.secrets, false))
        .catch(() => {}),
      call,
    );
    const unknown = await ctx.store
      .transition({
        id: record.id,
        from: ['dispatched'],
        to: 'unknown',
        token,
        events: [callEvent('outcome', call, record.id, { state: 'unknown', reason: sent.first })],
      })
      .catch(() => undefined);
    return { step: 'answer', record: unknown ?? { ...record, state: 'unknown' } };
  }
  const { done } = sent;
  if (call.task && call.contract.task === 'required' && !done.notDispatched) {
    // A task even though it finished first: its client reads the outcome through the task (delivered
    // then). A call that never left (the upstream asked for input first) is no task: answered as always.
    const recorded = await recordDone(ctx, call, record, token, done, sent.secrets, false);
    return { step: 'answer', record: recorded ?? { ...record, state: done.outcome } };
  }
  // A denial is not a result: nothing is delivered (the caller hears why, and nothing ran).
  const delivering = done.outcome !== 'unknown' && done.outcome !== 'denied';
  const early = answersBeforeRecorded(ctx.store, call, done, delivering);
  const recording = recordDone(ctx, call, record, token, done, sent.secrets, delivering, early);
  if (early) {
    // The answer leaves now; the write follows in the store's next commit. A crash in between
    // leaves the execution dispatched, so it reads unknown once its lease lapses: never a second
    // dispatch, never a false answer (docs/lifecycle.md step 11).
    ctx.inFlight.track(recording, call);
  } else {
    await recording;
  }
  if (done.outcome === 'unknown' || !done.result)
    return {
      step: 'answer',
      record: { ...record, state: 'unknown' },
      ...(done.detail ? { detail: done.detail } : {}),
    };
  return { step: 'settled', answer: markExecuted(done.result, record.id) };
}

/**
 * Whether the caller may be answered before its outcome is written. Only where losing that write
 * (a crash between the answer and the commit) can come to nothing worse than `unknown`: a
 * completed or failed result of a call that was dispatched, for a replay class whose recovery of
 * an unknown never sends again (not `keyed`, which re-sends under the same key). A refusal before
 * sending retires the execution in that write, and an unknown outcome is answered from it: both wait.
 * And only where no other process reads the store (soleReader): a gateway beside this one on the
 * same file, or in the same PostgreSQL fleet, must find the call finished once its answer has left.
 */
function answersBeforeRecorded(
  store: ExecutionStore,
  call: ToolCall,
  done: Done,
  delivering: boolean,
): boolean {
  return (
    delivering &&
    done.result !== undefined &&
    !done.notDispatched &&
    !done.left &&
    call.contract.replay !== 'keyed' &&
    // Last: asked only when the rest allows it (on SQLite it may read PRAGMA data_version).
    store.soleReader()
  );
}

/** The outcome's one write: its state, the result without secrets, and whether the caller got it. */
async function recordDone(
  ctx: StepContext,
  call: ToolCall,
  record: ExecutionRecord,
  token: string,
  done: Done,
  secrets: Sent['secrets'],
  delivering: boolean,
  deferrable = false,
): Promise<ExecutionRecord | undefined> {
  // Closing while it followed the target's task: left dispatched, for the next holder to follow.
  if (done.left) return undefined;
  // The caller who sent the secrets gets the result as the target gave it; what is kept, and
  // replayed to whoever repeats the call later, never holds them (docs/security.md). A denial
  // keeps its reason as the note (answered as IDEM_DENIED), not as a result.
  const denied = done.outcome === 'denied';
  const outcome: StoredOutcome | undefined =
    done.result && !denied ? { result: redactSecrets(done.result, secrets) } : undefined;
  const write = (late: boolean) =>
    ctx.store.transition({
      // The answer left without waiting for this write (answersBeforeRecorded): it may share the next commit.
      ...(deferrable && !late ? { deferrable: true } : {}),
      id: record.id,
      // Not yet dispatched when the channel itself marks the dispatch (claim.ts), and it refused first.
      from: ['dispatched', 'unknown', 'accepted', 'authorized'],
      to: done.outcome,
      token,
      holder: done.outcome === 'unknown' ? undefined : null,
      ...(outcome ? { outcome } : {}),
      ...(delivering ? { delivered: true } : {}),
      ...(denied && done.detail ? { note: done.detail } : {}),
      // Nothing left: retire it, so that a retry is a fresh attempt rather than a replay of this one.
      ...(done.notDispatched ? { release: true } : {}),
      events: [
        denied
          ? // Refused by the channel's own check (not an approver's decision: verify tells them apart).
            callEvent('denied', call, record.id, { refused: 'before_sending', reason: done.detail ?? '' })
          : callEvent('outcome', call, record.id, {
              state: done.outcome,
              ...(done.notDispatched ? { reason: done.notDispatched } : {}),
              ...(late ? { late: true } : {}),
            }),
        ...(delivering ? [callEvent('delivered', call, record.id)] : []),
      ],
    });
  try {
    const recorded = await write(false);
    ctx.taskChanges.changed(record.id);
    return recorded;
  } catch (error) {
    // The caller still gets the truth now; the store gets it once it answers (late-outcome.ts).
    ctx.inFlight.track(
      ctx.lateOutcomes.hold(
        record.id,
        {
          write: () => write(true),
          renew: () => ctx.store.renewLease(record.id, token, call.contract.leaseMs),
          written: () => ctx.taskChanges.changed(record.id),
        },
        error,
      ),
    );
    return undefined;
  }
}
