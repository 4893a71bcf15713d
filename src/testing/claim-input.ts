import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulid';
import type { ClaimInput } from '../store/types.js';

const nextUlid = monotonicFactory();

/** A fresh, well-formed fingerprint. */
export const newFingerprint = (): string => `fp_${randomBytes(32).toString('base64url')}`;

/** A claim as the engine makes one, for store-specific tests (the shared contract suite has its own). */
export function claimInput(overrides: Partial<ClaimInput> = {}): ClaimInput {
  return {
    id: `exe_${nextUlid()}`,
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
