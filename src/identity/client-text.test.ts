import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundedText, MAX_CLIENT_TEXT_CHARS } from './client-text.js';

describe('boundedText', () => {
  it('keeps a text up to the bound as it came, and a longer one as its start, length and digest', () => {
    const kept = 'k'.repeat(MAX_CLIENT_TEXT_CHARS);
    expect(boundedText(kept)).toBe(kept);
    expect(boundedText(`${kept}x`)).toMatch(/^k{64}… \(129 characters, sha256:[\w-]{43}\)$/);
  });

  it('is one-to-one: texts around the bound, a text written as another one’s bounded form, lone surrogates', () => {
    const long = 'x'.repeat(300);
    const forged = boundedText(long);
    expect(forged.length).toBeGreaterThan(MAX_CLIENT_TEXT_CHARS);
    // The bounded form sent as a text of its own is itself bounded again: never equal to the first.
    expect(boundedText(forged)).not.toBe(forged);
    // UTF-8 would make both lone surrogates U+FFFD; JSON keeps them apart.
    expect(boundedText(`${long}\ud800`)).not.toBe(boundedText(`${long}\ud801`));
    // A pair is never cut in half at the kept start.
    expect(boundedText(`${'a'.repeat(63)}😀${long}`).startsWith(`${'a'.repeat(63)}…`)).toBe(true);
    const around = fc.string({
      unit: fc.constantFrom('a', 'b', '\ud800', '😀'),
      minLength: 120,
      maxLength: 140,
    });
    fc.assert(
      fc.property(around, around, (a, b) => {
        expect(boundedText(a) === boundedText(b)).toBe(a === b);
        expect(boundedText(a).length).toBeLessThanOrEqual(MAX_CLIENT_TEXT_CHARS + 150);
      }),
      { numRuns: 2_000 },
    );
  });
});
