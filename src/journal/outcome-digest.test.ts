import { describe, expect, it } from 'vitest';
import {
  OUTCOME_DIGEST_FIELD,
  outcomeDigest,
  storedOutcomeDigest,
  withOutcomeDigest,
} from './outcome-digest.js';

describe('outcome digest', () => {
  it('is the same for the stored text, whatever its key order, and differs for another result', () => {
    const outcome = { result: { content: [{ type: 'text', text: 'charged' }], isError: false } };
    const reordered = '{"result":{"isError":false,"content":[{"text":"charged","type":"text"}]}}';
    expect(storedOutcomeDigest(reordered)).toBe(outcomeDigest(outcome));
    expect(storedOutcomeDigest(JSON.stringify({ result: { content: [] } }))).not.toBe(outcomeDigest(outcome));
  });

  it('never throws: a value RFC 8785 refuses (a lone surrogate) is digested as its JSON text', () => {
    const outcome = { result: { content: [{ type: 'text', text: 'lone \ud800 surrogate' }] } };
    expect(storedOutcomeDigest(JSON.stringify(outcome))).toBe(outcomeDigest(outcome));
  });

  it('goes on the event that records the outcome, and on no other', () => {
    const events = withOutcomeDigest('exe_1', { result: { content: [] } }, [
      { kind: 'outcome', executionId: 'exe_1', detail: { state: 'completed' } },
      { kind: 'delivered', executionId: 'exe_1' },
    ]);
    expect(events?.[0]?.detail?.[OUTCOME_DIGEST_FIELD]).toBe(outcomeDigest({ result: { content: [] } }));
    expect(events?.[1]?.detail).toBeUndefined();
  });
});
