import { StoreUnavailableError } from '../errors.js';
import type { ExecutionStore } from '../store/types.js';

/**
 * The authorization ladder (docs/approvals.md): a fixed order of rules, the first that
 * applies decides. Each step's name is journaled with the call it decided, so
 * an auditor reads why a call ran, asked, or was refused.
 */
export const LADDER_STEPS = [
  /** The store cannot be read: nothing can be recorded, so nothing runs (fail closed). */
  'store_unavailable',
  /** The channel could not resolve the target or the credential the call names. */
  'unresolved',
  /** `approval: every_call`: a human decides each call, allowlisted or not. */
  'every_call',
  /** `approval: session`, and this actor's session was approved for this tool. */
  'session_approved',
  /** The actor is on the tool's `allow_actors` list. */
  'allowlisted_actor',
  /** `approval: session`, not yet approved for this session. */
  'session',
  /** No rule asks: the call runs. */
  'default',
] as const;
export type LadderStep = (typeof LADDER_STEPS)[number];

export type LadderVerdict =
  | { decision: 'run'; step: 'session_approved' | 'allowlisted_actor' | 'default' }
  | { decision: 'ask'; step: 'every_call' | 'session' }
  | { decision: 'deny'; step: 'store_unavailable' | 'unresolved'; reason: string };

/** What the ladder looks at: the tool's policy, who calls from where, and what the channel could resolve. */
export interface LadderInput {
  tool: string;
  actor: string;
  /** Null where requests have no session (stateless HTTP): `approval: session` then asks every call. */
  session: string | null;
  policy: 'none' | 'session' | 'every_call';
  allowActors: readonly string[];
  /** Set by the channel when the target or credential could not be resolved: why. */
  unresolved?: string;
}

/** Evaluates the ladder; only the `session` policy costs a store read. */
export async function evaluateLadder(store: ExecutionStore, input: LadderInput): Promise<LadderVerdict> {
  if (input.unresolved !== undefined)
    return { decision: 'deny', step: 'unresolved', reason: input.unresolved };
  if (input.policy === 'every_call') return { decision: 'ask', step: 'every_call' };
  if (input.policy === 'session' && input.session !== null) {
    try {
      if (await store.sessionApproved(input.actor, input.session, input.tool))
        return { decision: 'run', step: 'session_approved' };
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      return { decision: 'deny', step: 'store_unavailable', reason: error.message };
    }
  }
  if (input.allowActors.includes(input.actor)) return { decision: 'run', step: 'allowlisted_actor' };
  if (input.policy === 'session') return { decision: 'ask', step: 'session' };
  return { decision: 'run', step: 'default' };
}
