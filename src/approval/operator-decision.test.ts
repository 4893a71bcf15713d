import { describe, expect, it } from 'vitest';
import { engineOnManualClock, libraryCall } from '../../test/support/engine-setup.js';
import { META } from '../executions/answers.js';
import { decideAsOperator } from './operator-decision.js';
import { loadApprovalView } from './view.js';

/** The operator's decision names the request's arguments digest; any other is refused, nothing decided. */
const operator = { by: 'operator:alice', via: 'cli' as const };

async function waiting(scope?: { business_key: string }) {
  const setup = engineOnManualClock();
  const contract = {
    replay: 'status' as const,
    approval: 'every_call' as const,
    ...(scope ? { scope } : {}),
  };
  const answer = await setup.engine.execute(libraryCall(contract, { order: 'o-1', cents: 5 }), async () => ({
    content: [],
  }));
  const ref = answer._meta?.[META.executionId] as string;
  return { ...setup, ref };
}

describe('decideAsOperator with the digest the operator was shown', () => {
  it('another digest: refused as digest_mismatch, saying both; the request stays pending', async () => {
    const { store, ref } = await waiting();
    const outcome = await decideAsOperator(store, ref, 'approved', operator, 'fp_something-else');
    const digest = (await store.get(ref))?.fingerprint as string;
    expect(outcome).toMatchObject({ decided: false, refusal: 'digest_mismatch' });
    expect(outcome.reason).toContain(digest);
    expect(outcome.reason).toContain('fp_something-else');
    expect((await store.getApproval(ref))?.decision).toBeNull();
    await expect(decideAsOperator(store, ref, 'approved', operator, digest)).resolves.toMatchObject({
      decided: true,
    });
    await expect(decideAsOperator(store, ref, 'denied', operator, digest)).resolves.toMatchObject({
      decided: false,
      refusal: 'already_decided',
    });
    await expect(decideAsOperator(store, 'exe_none', 'denied', operator, digest)).resolves.toMatchObject({
      refusal: 'no_request',
    });
  });

  it('under a business key the digest is the whole request’s, not the key’s fingerprint', async () => {
    const { store, ref } = await waiting({ business_key: 'order' });
    const record = await store.get(ref);
    const view = await loadApprovalView(store, ref);
    expect(record?.requestDigest).toMatch(/^fp_/);
    expect(view?.argumentsDigest).toBe(record?.requestDigest);
    expect(view?.argumentsDigest).not.toBe(record?.fingerprint);
    await expect(
      decideAsOperator(store, ref, 'approved', operator, record?.fingerprint),
    ).resolves.toMatchObject({ refusal: 'digest_mismatch' });
  });
});
