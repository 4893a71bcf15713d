import { describe, expect, it } from 'vitest';
import { IDEM_CODES } from '../errors.js';
import { idemAnswer } from './answers.js';

const textOf = (result: ReturnType<typeof idemAnswer>) => {
  const [first] = result.content ?? [];
  return (first as { type: 'text'; text: string }).text;
};

describe('idemAnswer', () => {
  it('ends a detail without punctuation with a full stop, so the advice is a sentence of its own', () => {
    const text = textOf(
      idemAnswer(IDEM_CODES.IDEM_OUTCOME_UNKNOWN, { ref: 'exe_1', detail: 'fetch failed' }),
    );
    expect(text).toContain('fetch failed. Do not retry');
  });

  it('leaves a detail that already ends a sentence as it is', () => {
    const text = textOf(idemAnswer(IDEM_CODES.IDEM_DENIED, { detail: 'Credential "pay" is not set.' }));
    expect(text).toContain('is not set. Do not retry');
    expect(text).not.toContain('..');
  });
});
