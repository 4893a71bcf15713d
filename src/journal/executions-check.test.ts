import { describe, expect, it } from 'vitest';
import { checkExecutions, journaledExecutions, type StoredExecutionRow } from './executions-check.js';
import { OUTCOME_DIGEST_FIELD, outcomeDigest, withOutcomeDigest } from './outcome-digest.js';
import type { StoredJournalRow } from './verify-report.js';

/**
 * An unknown outcome may keep what the target answered (its JSON-RPC error): the journal records
 * that stored outcome's digest like any other's, and the cross-check holds the row to it.
 */
const kept = { result: { isError: true, content: [{ type: 'text', text: 'boom' }], _meta: { err: -32603 } } };

function journalOf(unknownDetail: Record<string, unknown>): StoredJournalRow[] {
  const row = (seq: number, kind: string, detail: Record<string, unknown>) =>
    ({
      seq,
      at: seq,
      kind,
      executionId: 'exe_1',
      actor: 'token:alice',
      tool: 'charge',
      detailText: JSON.stringify(detail),
    }) as StoredJournalRow;
  return [
    row(1, 'accepted', { fingerprint: 'fp_1' }),
    row(2, 'dispatched', {}),
    row(3, 'outcome', unknownDetail),
  ];
}

const stored = (outcome: unknown): StoredExecutionRow => ({
  id: 'exe_1',
  actor: 'token:alice',
  tool: 'charge',
  state: 'unknown',
  updatedAt: 3,
  outcomeSha256: outcome === null ? null : outcomeDigest(outcome),
});

describe('an unknown outcome in the executions cross-check', () => {
  it('journals the digest of what it stored, and only when it stored something', () => {
    const events = [{ kind: 'outcome' as const, executionId: 'exe_1', detail: { state: 'unknown' } }];
    expect(withOutcomeDigest('exe_1', kept, events)?.[0]?.detail?.[OUTCOME_DIGEST_FIELD]).toBe(
      outcomeDigest(kept),
    );
    expect(withOutcomeDigest('exe_1', undefined, events)?.[0]?.detail).toEqual({ state: 'unknown' });
  });

  it("matches the row that kept the target's answer; a forged or an added one is named", async () => {
    const journal = await journaledExecutions(
      journalOf({ state: 'unknown', [OUTCOME_DIGEST_FIELD]: outcomeDigest(kept) }),
    );
    expect((await checkExecutions(journal, [stored(kept)])).ok).toBe(true);
    const forged = await checkExecutions(journal, [stored({ result: { content: [] } })]);
    expect(forged.firstBad?.problem).toBe('outcome_mismatch');
    // An unknown that stored nothing: a stored outcome on its row is one the journal never recorded.
    const none = await journaledExecutions(journalOf({ state: 'unknown' }));
    expect((await checkExecutions(none, [stored(null)])).ok).toBe(true);
    expect((await checkExecutions(none, [stored(kept)])).firstBad?.problem).toBe('outcome_mismatch');
  });
});
