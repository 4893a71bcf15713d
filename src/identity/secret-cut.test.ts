import { describe, expect, it } from 'vitest';
import { SECRET_PLACEHOLDER } from './redaction.js';
import { headWithoutSecrets, MIN_CUT_SECRET_CHARS, tailWithoutSecrets } from './secret-cut.js';

const SECRET = 'Zq9vX7pL2mR4tW8zK3nB6cY1hJ5fD0gS2aE4uI7oP9wQ3eT6rU1y';

/** Whether any run of MIN_CUT_SECRET_CHARS characters of the secret is in `text`. */
function holdsPartOf(text: string, secret = SECRET): boolean {
  for (let i = 0; i + MIN_CUT_SECRET_CHARS <= secret.length; i++)
    if (text.includes(secret.slice(i, i + MIN_CUT_SECRET_CHARS))) return true;
  return false;
}

describe('headWithoutSecrets', () => {
  it('keeps no part of a secret that straddles the cut, at every offset, in bytes and in characters', () => {
    const limit = 100;
    for (const unit of ['bytes', 'chars'] as const) {
      for (let before = 1; before < SECRET.length; before++) {
        const text = `${'.'.repeat(limit - before)}${SECRET}${'-'.repeat(50)}`;
        const kept = headWithoutSecrets(text, limit, [SECRET], { unit });
        expect(kept.cut).toBe(true);
        expect(holdsPartOf(kept.text), `${unit}, ${before} before the cut`).toBe(false);
        // The secret is replaced whole before the cut, which then keeps the placeholder whole.
        const redacted = `${'.'.repeat(limit - before)}${SECRET_PLACEHOLDER}${'-'.repeat(50)}`;
        expect(kept.text).toBe(
          redacted.slice(0, Math.max(limit, limit - before + SECRET_PLACEHOLDER.length)),
        );
      }
    }
  });

  it('treats the end of a text read no further as a cut: a secret begun there is replaced', () => {
    for (let shown = MIN_CUT_SECRET_CHARS; shown < SECRET.length; shown++) {
      const text = `${'.'.repeat(20)}${SECRET.slice(0, shown)}`;
      const kept = headWithoutSecrets(text, 1000, [SECRET], { unit: 'bytes', complete: false });
      expect(kept).toEqual({ text: `${'.'.repeat(20)}${SECRET_PLACEHOLDER}`, cut: true });
    }
    // Shorter than that is taken for chance; a text that fits and is complete is not cut.
    const chance = headWithoutSecrets('ends in Zq', 1000, [SECRET], { unit: 'bytes', complete: false });
    expect(chance.text).toBe('ends in Zq');
    expect(headWithoutSecrets(`a ${SECRET} b`, 1000, [SECRET], { unit: 'bytes' })).toEqual({
      text: `a ${SECRET_PLACEHOLDER} b`,
      cut: false,
    });
  });

  it('redacts before it cuts: a body that fits once scrubbed is not cut', () => {
    const text = `${'.'.repeat(60)}${SECRET}`;
    expect(headWithoutSecrets(text, 70, [SECRET], { unit: 'chars' })).toEqual({
      text: `${'.'.repeat(60)}${SECRET_PLACEHOLDER}`,
      cut: false,
    });
  });

  it('never halves a character (UTF-8 bytes) or a surrogate pair (characters)', () => {
    expect(headWithoutSecrets('aé', 2, [], { unit: 'bytes' }).text).toBe('a');
    expect(headWithoutSecrets('a😀b', 2, [], { unit: 'chars' }).text).toBe('a');
    expect(headWithoutSecrets('a😀b', 5, [], { unit: 'bytes' }).text).toBe('a😀');
  });
});

describe('tailWithoutSecrets', () => {
  it("keeps no part of a secret whose start the tail's cut removed, at every offset", () => {
    for (let after = 1; after < SECRET.length; after++) {
      const text = `${SECRET.slice(SECRET.length - after)}${'.'.repeat(30)}`;
      const kept = tailWithoutSecrets(text, [SECRET]);
      expect(holdsPartOf(kept), `${after} after the cut`).toBe(false);
      if (after >= MIN_CUT_SECRET_CHARS) expect(kept).toBe(`${SECRET_PLACEHOLDER}${'.'.repeat(30)}`);
    }
  });
});
