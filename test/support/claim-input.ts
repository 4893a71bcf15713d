import { randomBytes } from 'node:crypto';
import { executionIds } from '../../src/executions/ids.js';
import type { ApprovalRequestInput, ClaimInput, ExecutionStore } from '../../src/store/types.js';

const nextExecutionId = executionIds();

/** A fresh, well-formed fingerprint. */
export const newFingerprint = (): string => `fp_${randomBytes(32).toString('base64url')}`;

/** A claim as the engine makes one, for store-specific tests (the shared contract suite has its own). */
export function claimInput(overrides: Partial<ClaimInput> = {}): ClaimInput {
  return {
    id: nextExecutionId(),
    fingerprint: newFingerprint(),
    actor: 'user:alice@example.com',
    tool: 'payments.charge',
    session: 'ses_01J9Z8Q4',
    replay: 'keyed',
    state: 'accepted',
    attachWindowMs: 60_000,
    claimToken: randomBytes(24).toString('base64url'),
    leaseOwner: 'gw-a:4242',
    leaseMs: 60_000,
    argumentsPreview: '{"amount":1200}',
    ...overrides,
  };
}

/** An approval request as the engine makes one, for store tests: one call, ten minutes to decide. */
export function approvalRequest(overrides: Partial<ApprovalRequestInput> = {}): ApprovalRequestInput {
  return {
    policy: 'every_call',
    channel: 'mcp',
    target: 'payments',
    credentialRef: 'stripe-live',
    earlier: null,
    expiresInMs: 10 * 60_000,
    ...overrides,
  };
}

/** A dispatch left behind by a process that died: its 20 ms lease lapses at once. */
export function deadDispatch(overrides: Partial<ClaimInput> = {}): ClaimInput {
  return claimInput({
    session: null,
    replay: 'status',
    state: 'dispatched',
    dispatchTimeoutMs: 60_000,
    claimToken: 't',
    leaseOwner: 'dead',
    leaseMs: 20,
    argumentsPreview: '{}',
    ...overrides,
  });
}

/**
 * Fills a store with `count` completed executions, each claimed and finished
 * as the engine would (one accepted event; the result `resultText(i, id)`):
 * a store as a gateway leaves it, for the tests and scripts that damage or
 * measure one. Returns the execution ids in order.
 */
export async function fillWithCompleted(
  store: ExecutionStore,
  count: number,
  resultText: (index: number, id: string) => string = (index) => `charged ${index}`,
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const claim = claimInput({ state: 'dispatched', dispatchTimeoutMs: 60_000 });
    await store.claim(claim, { events: [{ kind: 'accepted', executionId: claim.id }] });
    await store.transition({
      id: claim.id,
      from: ['dispatched'],
      to: 'completed',
      token: claim.claimToken,
      holder: null,
      outcome: { result: { content: [{ type: 'text', text: resultText(i, claim.id) }] } },
    });
    ids.push(claim.id);
  }
  return ids;
}
