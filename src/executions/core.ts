import type { ResolvedContract } from '../contracts/contract.js';
import type { KnownSecrets } from '../identity/redaction.js';
import type { ActivityEventInput } from '../journal/events.js';
import type { ExecutionStore } from '../store/types.js';
import type { Logger, ToolCall } from './call.js';
import type { ToolResult } from './outcome.js';

/**
 * What the engine's steps (claim, dispatch, recovery, answers) share: where
 * executions are kept, who this engine is, and where it reports. Each step is
 * a function of this and of the call in hand.
 */
export interface EngineCore {
  readonly store: ExecutionStore;
  /** Lease owner name. */
  readonly owner: string;
  /** Name of the status tool quoted in advice texts. */
  readonly statusTool: string;
  readonly logger: Logger;
  /** Contracts by tool name, so the status tool can run a tool's status probe. */
  readonly contracts: ReadonlyMap<string, ResolvedContract>;
  /** Credentials and other secrets no argument carries: scrubbed from every result, stored or answered. */
  readonly knownSecrets: KnownSecrets;
}

/** Lost a compare-and-set to another caller: read again and decide again. */
export const RETRY = Symbol('retry');
export type Attempt = ToolResult | typeof RETRY;

/** Appends journal events on their own; a failure is logged, not thrown: the journal never blocks an answer. */
export async function journal(core: EngineCore, events: ActivityEventInput[]): Promise<void> {
  if (events.length === 0) return;
  try {
    await core.store.appendEvents(events);
  } catch (error) {
    core.logger.warn('journal append failed', { error: String(error) });
  }
}

/** A journal event about `call`, on execution `executionId`. */
export function callEvent(
  kind: ActivityEventInput['kind'],
  call: ToolCall,
  executionId: string,
  detail: ActivityEventInput['detail'] = {},
): ActivityEventInput {
  // The first event of a call (a new execution, or one it attached to) says which token it came with.
  const token = call.caller.token;
  return {
    kind,
    executionId,
    actor: call.caller.actor,
    tool: call.tool,
    requestRef: call.caller.requestRef ?? null,
    detail:
      token && (kind === 'received' || kind === 'attached')
        ? { ...detail, token: { issuer: token.issuer, jti: token.jti } }
        : detail,
  };
}

/**
 * Where the action goes, as the `accepted` event records it for the status
 * tool and `idem executions show`: channel, target and credential NAME.
 */
export function actionRecord(call: ToolCall): Record<string, string> {
  return {
    channel: call.channel,
    target: call.target,
    ...(call.credentialRef ? { credential: call.credentialRef } : {}),
  };
}
