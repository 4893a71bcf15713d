import { describe, expect, it } from 'vitest';
import { withFaults } from '../../test/support/faulty-store.js';
import { StoreUnavailableError } from '../errors.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { evaluateLadder, type LadderInput } from './ladder.js';

const base: LadderInput = {
  tool: 'deploy',
  actor: 'token:alice',
  session: 's1',
  policy: 'none',
  allowActors: [],
};

/** A store in which alice's session s1 was approved for deploy. */
async function storeWithApprovedSession(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.claim({
    id: 'exe_1',
    fingerprint: 'fp-1',
    actor: 'token:alice',
    tool: 'deploy',
    session: 's1',
    replay: 'review',
    state: 'awaiting_approval',
    attachWindowMs: 60_000,
    claimToken: 't',
    leaseOwner: 'o',
    leaseMs: 60_000,
    argumentsPreview: '{}',
    approval: {
      policy: 'session',
      channel: 'mcp',
      target: 'up',
      credentialRef: null,
      earlier: null,
      expiresInMs: 60_000,
    },
  });
  await store.decideApproval({ id: 'exe_1', decision: 'approved', by: 'bob', via: 'cli' });
  return store;
}

describe('the authorization ladder, in order (docs/approvals.md)', () => {
  it('unresolved target or credential → deny, before any policy', async () => {
    const verdict = await evaluateLadder(new MemoryStore(), {
      ...base,
      policy: 'every_call',
      allowActors: ['token:alice'],
      unresolved: 'no credential "stripe"',
    });
    expect(verdict).toEqual({ decision: 'deny', step: 'unresolved', reason: 'no credential "stripe"' });
  });

  it('every_call → ask, even an allowlisted actor in an approved session', async () => {
    const store = await storeWithApprovedSession();
    const verdict = await evaluateLadder(store, {
      ...base,
      policy: 'every_call',
      allowActors: ['token:alice'],
    });
    expect(verdict).toEqual({ decision: 'ask', step: 'every_call' });
  });

  it('session already approved → run; before the allowlist', async () => {
    const store = await storeWithApprovedSession();
    const verdict = await evaluateLadder(store, { ...base, policy: 'session', allowActors: ['token:alice'] });
    expect(verdict).toEqual({ decision: 'run', step: 'session_approved' });
  });

  it('allowlisted actor → run; otherwise session → ask; a new session asks again', async () => {
    const store = await storeWithApprovedSession();
    expect(
      await evaluateLadder(store, {
        ...base,
        session: 's2',
        policy: 'session',
        allowActors: ['token:alice'],
      }),
    ).toEqual({ decision: 'run', step: 'allowlisted_actor' });
    expect(await evaluateLadder(store, { ...base, session: 's2', policy: 'session' })).toEqual({
      decision: 'ask',
      step: 'session',
    });
    // Without a session (stateless HTTP) there is nothing to remember: every call asks.
    expect(await evaluateLadder(store, { ...base, session: null, policy: 'session' })).toEqual({
      decision: 'ask',
      step: 'session',
    });
  });

  it('no rule asks → run (default), without reading the store', async () => {
    const store = withFaults(new MemoryStore(), {
      sessionApproved: () => Promise.reject(new Error('must not be read')),
    });
    expect(await evaluateLadder(store, base)).toEqual({ decision: 'run', step: 'default' });
  });

  it('store unavailable → deny (the engine answers not executed); other errors are not hidden', async () => {
    const down = withFaults(new MemoryStore(), {
      sessionApproved: () => Promise.reject(new StoreUnavailableError('database is down')),
    });
    expect(await evaluateLadder(down, { ...base, policy: 'session' })).toEqual({
      decision: 'deny',
      step: 'store_unavailable',
      reason: 'database is down',
    });
    const broken = withFaults(new MemoryStore(), {
      sessionApproved: () => Promise.reject(new TypeError('bug')),
    });
    await expect(evaluateLadder(broken, { ...base, policy: 'session' })).rejects.toThrow('bug');
  });
});
