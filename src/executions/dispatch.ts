import {
  DispatchRefusedError,
  IDEM_CODES,
  messageOf,
  NotDispatchedError,
  OutcomeUnknownError,
} from '../errors.js';
import { redactSecrets, secretValues } from '../identity/redaction.js';
import type { ExecutionRecord } from '../store/types.js';
import { MAX_JSON_DEPTH, withinDepth } from '../support/json-depth.js';
import { idemAnswer, markExecuted } from './answers.js';
import type { Dispatch, ToolCall } from './call.js';
import { callEvent, type EngineCore } from './core.js';
import { answerFor } from './describe.js';
import type { StoredOutcome, ToolResult } from './outcome.js';

/**
 * Dispatches while holding the lease, renewing it as the target works. The
 * caller gets an answer by the contract's timeout at the latest; the work
 * goes on, and its real outcome is recorded when it arrives.
 */
export async function runDispatch(
  core: EngineCore,
  record: ExecutionRecord,
  token: string,
  call: ToolCall,
  dispatch: Dispatch,
  redispatch: boolean,
): Promise<ToolResult> {
  const { leaseMs, timeoutMs } = call.contract;
  // Taken before the handler runs: it may consume (and clear) its secret arguments.
  const secrets = secretValues(call.arguments, call.contract.argumentRules);
  const renewal = setInterval(
    () => {
      core.store.renewLease(record.id, token, leaseMs).catch((error) => {
        core.logger.warn('lease renewal failed', { ref: record.id, error: String(error) });
      });
    },
    Math.max(10, Math.floor(leaseMs / 3)),
  );
  renewal.unref();

  type Done = {
    outcome: 'completed' | 'failed' | 'unknown';
    result?: ToolResult;
    notDispatched?: 'not_dispatched' | 'refused';
    /** Why the outcome is unknown, when the channel said (a timeout, a redirect it would not follow). */
    detail?: string;
  };
  // Credentials the channel resolves are known only once it has: what it hands back, or says
  // in an error, is scrubbed of them before anyone — caller, store, log — sees it.
  const scrub = <T>(value: T): T => core.knownSecrets.redact(value);
  const work = (async (): Promise<Done> => {
    try {
      const result = received(core, call, await dispatch({ executionId: record.id, redispatch }));
      return { outcome: result.isError ? 'failed' : 'completed', result };
    } catch (error) {
      if (error instanceof NotDispatchedError) {
        const refused = error instanceof DispatchRefusedError;
        const answer = notDispatchedAnswer(error, scrub, record.id);
        return { outcome: 'failed', result: answer, notDispatched: refused ? 'refused' : 'not_dispatched' };
      }
      if (error instanceof OutcomeUnknownError) return { outcome: 'unknown', detail: scrub(error.message) };
      if (isAbort(error)) return { outcome: 'unknown' };
      return {
        outcome: 'failed',
        result: { isError: true, content: [{ type: 'text', text: scrub(messageOf(error)) }] },
      };
    }
  })();

  // Whichever comes first decides what the caller hears: the outcome (then it is
  // recorded as delivered in the same write) or the timeout (then it is `unknown`
  // for the caller, and the outcome, when it comes, is recorded but not delivered).
  let decided: 'outcome' | 'timeout' | undefined;
  const settled = work.then(async (done) => {
    clearInterval(renewal);
    decided ??= 'outcome';
    const delivering = decided === 'outcome' && done.outcome !== 'unknown';
    // The caller who sent the secrets gets the result as the target gave it; what is kept, and
    // replayed to whoever repeats the call later, never holds them (docs/security.md).
    const outcome: StoredOutcome | undefined = done.result
      ? { result: redactSecrets(done.result, secrets) }
      : undefined;
    try {
      await core.store.transition({
        id: record.id,
        from: ['dispatched', 'unknown'],
        to: done.outcome,
        token,
        holder: done.outcome === 'unknown' ? undefined : null,
        ...(outcome ? { outcome } : {}),
        ...(delivering ? { delivered: true } : {}),
        // Nothing left: retire it, so that a retry is a fresh attempt rather than a replay of this one.
        ...(done.notDispatched ? { release: true } : {}),
        events: [
          callEvent('outcome', call, record.id, {
            state: done.outcome,
            ...(done.notDispatched ? { reason: done.notDispatched } : {}),
          }),
          ...(delivering ? [callEvent('delivered', call, record.id)] : []),
        ],
      });
    } catch (error) {
      // The caller still gets the truth; the record stays `dispatched` and turns `unknown` when the lease lapses.
      core.logger.error('outcome could not be recorded', { ref: record.id, error: String(error) });
    }
    return done;
  });

  let timer: NodeJS.Timeout | undefined;
  let reason: 'timeout' | 'cancelled' = 'timeout';
  const deadline = new Promise<'timeout'>((resolve) => {
    const giveUp = (why: 'timeout' | 'cancelled') => {
      if (decided) return;
      decided = 'timeout';
      reason = why;
      resolve('timeout');
    };
    timer = setTimeout(() => giveUp('timeout'), timeoutMs);
    timer.unref();
    // The caller cancelled after dispatch (docs/protocol.md): the effect may happen anyway, so the
    // outcome is unknown — not failed — and is recorded when (if) the target answers.
    call.signal?.addEventListener('abort', () => giveUp('cancelled'), { once: true });
  });
  const first = await Promise.race([settled, deadline]);
  clearTimeout(timer);

  if (first === 'timeout') {
    const unknown = await core.store
      .transition({
        id: record.id,
        from: ['dispatched'],
        to: 'unknown',
        token,
        events: [callEvent('outcome', call, record.id, { state: 'unknown', reason })],
      })
      .catch(() => undefined);
    settled.catch(() => {});
    return answerFor(core, unknown ?? { ...record, state: 'unknown' });
  }
  if (first.outcome === 'unknown' || !first.result)
    return answerFor(core, { ...record, state: 'unknown' }, [], first.detail);
  return markExecuted(first.result, record.id);
}

/**
 * A read-only call: nothing is claimed or recorded, but the caller hears what
 * a claimed call would of a request that never left — refused (IDEM_DENIED)
 * or not sent (IDEM_NOT_EXECUTED) — and gets nothing a credential's value
 * is in: a read's answer may echo what was sent, as a write's may. A read
 * sent and not answered is a plain error, since a read changes nothing and
 * may simply be repeated. Anything else the dispatch throws is the caller's,
 * as it was (the MCP SDK turns it into an error result, or a protocol error).
 */
export async function dispatchReadOnly(
  core: EngineCore,
  call: ToolCall,
  dispatch: Dispatch,
): Promise<ToolResult> {
  const scrub = <T>(value: T): T => core.knownSecrets.redact(value);
  try {
    return received(core, call, await dispatch({ executionId: null, redispatch: false }));
  } catch (error) {
    if (error instanceof NotDispatchedError) return notDispatchedAnswer(error, scrub, undefined);
    if (error instanceof OutcomeUnknownError)
      return {
        isError: true,
        content: [
          {
            type: 'text',
            text: `${scrub(error.message)} The tool only reads, so calling it again is safe.`,
          },
        ],
      };
    throw error;
  }
}

/**
 * What is done to every result a dispatch hands back, claimed or read-only: cut
 * to the depth that can be stored and sent (support/json-depth.ts; an answer
 * nested thousands deep would be neither), saying so on the log when it was —
 * an answer deeper than that, but not so deep that it broke, used to pass
 * unchanged — then scrubbed of the credentials the channel resolved.
 */
function received(core: EngineCore, call: ToolCall, result: ToolResult): ToolResult {
  const kept = withinDepth(result);
  if (kept !== result)
    core.logger.warn(`a result nested deeper than ${MAX_JSON_DEPTH} levels was cut there`, {
      tool: call.tool,
    });
  return core.knownSecrets.redact(kept);
}

/** What a caller hears of a dispatch that never left: refused by a check, or not sent at all. */
function notDispatchedAnswer(
  error: NotDispatchedError,
  scrub: (text: string) => string,
  ref: string | undefined,
): ToolResult {
  const code = error instanceof DispatchRefusedError ? IDEM_CODES.IDEM_DENIED : IDEM_CODES.IDEM_NOT_EXECUTED;
  return idemAnswer(code, { ...(ref ? { ref } : {}), detail: scrub(error.message) });
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}
