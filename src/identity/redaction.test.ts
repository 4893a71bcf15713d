import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { prepareArguments } from './arguments.js';
import { Fingerprinter } from './fingerprint.js';
import { MIN_REDACTED_SECRET_LENGTH, redactSecrets, SECRET_PLACEHOLDER, secretValues } from './redaction.js';

describe('secretValues', () => {
  it('collects the values at secret paths, wildcards included, with their JSON-escaped and URL-encoded forms', () => {
    const values = secretValues(
      {
        token: 'abc"def/ghi',
        cards: [{ number: '4000056655665556' }, { number: 4111111111111111 }],
        other: 'x',
      },
      { secrets: ['token', 'cards.*.number', 'missing.path'] },
    );
    expect(values).toEqual(
      expect.arrayContaining([
        'abc"def/ghi',
        'abc\\"def/ghi',
        'abc%22def%2Fghi',
        '4000056655665556',
        '4111111111111111',
      ]),
    );
    expect(values).not.toContain('x');
  });

  it(`skips values shorter than ${MIN_REDACTED_SECRET_LENGTH} characters: a CVV would redact every "123"`, () => {
    expect(
      secretValues({ cvv: '123', pin: 12345, key: 'abcdef' }, { secrets: ['cvv', 'pin', 'key'] }),
    ).toEqual(['abcdef']);
  });
});

describe('redactSecrets', () => {
  it('replaces every occurrence at any depth, in keys too, and leaves the input untouched', () => {
    const result = {
      content: [{ type: 'text', text: 'key=s3cr3t-value; again s3cr3t-value' }],
      structuredContent: {
        deep: { list: [{ 's3cr3t-value': 'as a key' }, 'prefix-s3cr3t-value-suffix'] },
        n: 7,
      },
    };
    const before = structuredClone(result);
    const redacted = redactSecrets(result, ['s3cr3t-value']);
    expect(redacted).toEqual({
      content: [{ type: 'text', text: `key=${SECRET_PLACEHOLDER}; again ${SECRET_PLACEHOLDER}` }],
      structuredContent: {
        deep: { list: [{ [SECRET_PLACEHOLDER]: 'as a key' }, `prefix-${SECRET_PLACEHOLDER}-suffix`] },
        n: 7,
      },
    });
    expect(result).toEqual(before);
  });

  it('replaces a numeric secret echoed back as a number, and leaves other numbers', () => {
    const secrets = secretValues({ card: 4111111111111111 }, { secrets: ['card'] });
    expect(redactSecrets({ echoed: { card: 4111111111111111, amount: 1200 } }, secrets)).toEqual({
      echoed: { card: SECRET_PLACEHOLDER, amount: 1200 },
    });
  });

  it('returns the same object when there is nothing to redact', () => {
    const result = { content: [{ type: 'text', text: 'nothing here' }] };
    expect(redactSecrets(result, ['s3cr3t-value'])).toBe(result);
    expect(redactSecrets(result, [])).toBe(result);
  });

  it('replaces a longer secret whole before a shorter one inside it', () => {
    const secrets = secretValues({ a: 'abcdef', b: 'abcdef-123456' }, { secrets: ['a', 'b'] });
    expect(redactSecrets('x abcdef-123456 y abcdef', secrets)).toBe(
      `x ${SECRET_PLACEHOLDER} y ${SECRET_PLACEHOLDER}`,
    );
  });
});

describe('the arguments preview', () => {
  it('hides a secret value that also appears inside another argument', () => {
    const prepared = prepareArguments(
      { token: 'ghp_0123456789abcdef', command: 'git clone https://ghp_0123456789abcdef@github.com/o/r' },
      { ignore: [], secrets: ['token'], defaults: {} },
      new Fingerprinter(randomBytes(32)),
    );
    expect(prepared.preview).not.toContain('ghp_0123456789abcdef');
    expect(prepared.preview).toContain(`https://${SECRET_PLACEHOLDER}@github.com`);
  });
});
