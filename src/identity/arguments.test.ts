import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { type ArgumentRules, NO_ARGUMENT_RULES } from './argument-rules.js';
import { PREVIEW_MAX_CHARS, prepareArguments, secretPathsFromSchema } from './arguments.js';
import { Fingerprinter } from './fingerprint.js';

const fingerprinter = new Fingerprinter(randomBytes(32));
const json = fc.jsonValue({ stringUnit: 'grapheme', maxDepth: 4 });

const rules = (partial: Partial<ArgumentRules>): ArgumentRules => ({ ...NO_ARGUMENT_RULES, ...partial });

/** A secret that cannot occur by accident in a digest or in other text. */
const secretText = fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => `S3cr3t«${s}»`);

function intentOf(args: unknown, r: ArgumentRules): string {
  const { forFingerprint } = prepareArguments(args, r, fingerprinter);
  return fingerprinter.intent({
    actor: 'a',
    tool: 't',
    channel: 'library',
    target: '',
    credential_ref: null,
    method: 'call',
    arguments: forFingerprint,
    intent_scope: { kind: 'actor' },
  });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

describe('prepareArguments: secrets', () => {
  const secretRules = rules({ secrets: ['password', 'card.number', 'items.*.token', 'headers.*'] });

  it('never lets a secret value into forFingerprint or the preview', () => {
    fc.assert(
      fc.property(secretText, secretText, secretText, secretText, (password, number, token, header) => {
        const args = {
          user: 'alice',
          password,
          card: { number, expiry: '12/30' },
          items: [{ sku: 'a', token }, { sku: 'b' }],
          headers: { 'x-auth': header },
        };
        const prepared = prepareArguments(args, secretRules, fingerprinter);
        const fingerprintText = JSON.stringify(prepared.forFingerprint);
        for (const secret of [password, number, token, header]) {
          expect(fingerprintText).not.toContain(secret);
          expect(prepared.preview).not.toContain(secret);
        }
        // Not even the start of one.
        expect(fingerprintText).not.toContain('S3cr3t');
        expect(prepared.preview).not.toContain('S3cr3t');
        // What is not secret is kept.
        expect(prepared.forFingerprint).toMatchObject({ user: 'alice', card: { expiry: '12/30' } });
        expect(prepared.preview).toContain('alice');
        expect(prepared.preview).toContain('[secret]');
      }),
    );
  });

  it('replaces a secret by a keyed digest', () => {
    const prepared = prepareArguments({ password: 'hunter2', n: 1 }, secretRules, fingerprinter);
    expect(prepared.forFingerprint).toEqual({
      password: { $idem_secret: fingerprinter.secret('hunter2') },
      n: 1,
    });
    expect(fingerprinter.secret('hunter2')).toMatch(/^hmac:[A-Za-z0-9_-]{43}$/);
    // Another installation digests the same secret differently.
    expect(new Fingerprinter(randomBytes(32)).secret('hunter2')).not.toBe(fingerprinter.secret('hunter2'));
  });

  it('gives equal secrets one fingerprint and different secrets different ones', () => {
    fc.assert(
      fc.property(secretText, secretText, (s1, s2) => {
        const a = intentOf({ user: 'alice', password: s1 }, secretRules);
        expect(intentOf({ password: s1, user: 'alice' }, secretRules)).toBe(a);
        if (s1 === s2) expect(intentOf({ user: 'alice', password: s2 }, secretRules)).toBe(a);
        else expect(intentOf({ user: 'alice', password: s2 }, secretRules)).not.toBe(a);
      }),
    );
    expect(intentOf({ card: { number: '4111' } }, secretRules)).not.toBe(
      intentOf({ card: { number: '4242' } }, secretRules),
    );
    expect(intentOf({ items: [{ token: 'a' }] }, secretRules)).not.toBe(
      intentOf({ items: [{ token: 'b' }] }, secretRules),
    );
    expect(intentOf({ items: [{ token: 'a' }] }, secretRules)).toBe(
      intentOf({ items: [{ token: 'a' }] }, secretRules),
    );
  });

  it('digests whole structured secrets and leaves absent ones absent', () => {
    const r = rules({ secrets: ['credentials', 'missing.deep', 'list.5'] });
    const prepared = prepareArguments(
      { credentials: { user: 'u', pass: 'p4ss-w0rd' }, list: [1] },
      r,
      fingerprinter,
    );
    expect(prepared.forFingerprint).toEqual({
      credentials: { $idem_secret: fingerprinter.secret({ pass: 'p4ss-w0rd', user: 'u' }) },
      list: [1],
    });
    expect(JSON.stringify(prepared)).not.toContain('p4ss-w0rd');
  });

  it('digests secrets addressed by array index', () => {
    const r = rules({ secrets: ['cards.1.number'] });
    const prepared = prepareArguments(
      { cards: [{ number: 'one' }, { number: 'two-secret' }] },
      r,
      fingerprinter,
    );
    expect(prepared.forFingerprint).toEqual({
      cards: [{ number: 'one' }, { number: { $idem_secret: fingerprinter.secret('two-secret') } }],
    });
    expect(prepared.preview).not.toContain('two-secret');
  });

  it('is not fooled by a caller supplying the digest shape itself', () => {
    const digest = { $idem_secret: fingerprinter.secret('hunter2') };
    // Under a secret path, the supplied object is itself digested: it is not the secret.
    expect(intentOf({ password: digest }, secretRules)).not.toBe(
      intentOf({ password: 'hunter2' }, secretRules),
    );
  });
});

describe('secretPathsFromSchema', () => {
  it('finds writeOnly and format: password, nested and in array items', () => {
    const schema = {
      type: 'object',
      properties: {
        user: { type: 'string' },
        password: { type: 'string', format: 'password' },
        apiKey: { type: 'string', writeOnly: true },
        card: {
          type: 'object',
          properties: { number: { type: 'string', writeOnly: true }, expiry: { type: 'string' } },
        },
        items: {
          type: 'array',
          items: { type: 'object', properties: { token: { type: 'string', format: 'password' }, sku: {} } },
        },
        pins: { type: 'array', items: { type: 'string', writeOnly: true } },
        auth: {
          anyOf: [
            { type: 'object', properties: { secret: { type: 'string', writeOnly: true } } },
            {
              type: 'object',
              properties: { secret: { type: 'string', writeOnly: true }, otp: { format: 'password' } },
            },
          ],
        },
        notSecret: { type: 'string', writeOnly: false, format: 'email' },
      },
    };
    expect(secretPathsFromSchema(schema).sort()).toEqual(
      ['apiKey', 'auth.otp', 'auth.secret', 'card.number', 'items.*.token', 'password', 'pins.*'].sort(),
    );
  });

  it('finds nothing in schemas without secrets, or in non-schemas', () => {
    expect(secretPathsFromSchema({ type: 'object', properties: { a: { type: 'string' } } })).toEqual([]);
    expect(secretPathsFromSchema(undefined)).toEqual([]);
    expect(secretPathsFromSchema(null)).toEqual([]);
    expect(secretPathsFromSchema('password')).toEqual([]);
    // The root itself is not an argument path.
    expect(secretPathsFromSchema({ writeOnly: true })).toEqual([]);
  });

  it('feeds prepareArguments: the declared secrets are digested', () => {
    const schema = { properties: { password: { format: 'password' }, list: { items: { writeOnly: true } } } };
    const r = rules({ secrets: secretPathsFromSchema(schema) });
    const prepared = prepareArguments({ password: 'pw-1', list: ['k-1', 'k-2'], x: 1 }, r, fingerprinter);
    const text = JSON.stringify(prepared);
    for (const secret of ['pw-1', 'k-1', 'k-2']) expect(text).not.toContain(secret);
  });

  it('stops on self-referencing schemas', () => {
    const schema: Record<string, unknown> = { type: 'object', properties: {} };
    (schema.properties as Record<string, unknown>).child = schema;
    expect(() => secretPathsFromSchema(schema)).not.toThrow();
  });
});

describe('prepareArguments: preview', () => {
  it('is bounded for any arguments, however large', () => {
    fc.assert(
      fc.property(json, (args) => {
        expect(
          prepareArguments({ args }, NO_ARGUMENT_RULES, fingerprinter).preview.length,
        ).toBeLessThanOrEqual(PREVIEW_MAX_CHARS);
      }),
    );
    const huge = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`key${i}`, 'v'.repeat(1_000)]));
    const preview = prepareArguments(
      { ...huge, list: Array(1_000).fill('x'.repeat(100)) },
      NO_ARGUMENT_RULES,
      fingerprinter,
    ).preview;
    expect(preview.length).toBeLessThanOrEqual(PREVIEW_MAX_CHARS);
    expect(preview.endsWith('…')).toBe(true);
    const longKey = prepareArguments({ ['k'.repeat(100_000)]: 1 }, NO_ARGUMENT_RULES, fingerprinter).preview;
    expect(longKey.length).toBeLessThanOrEqual(PREVIEW_MAX_CHARS);
  });

  it('shows small arguments as they are', () => {
    expect(prepareArguments({ a: 1, b: 'x' }, NO_ARGUMENT_RULES, fingerprinter).preview).toBe(
      '{"a":1,"b":"x"}',
    );
  });

  it('redacts secret-looking names even when the contract does not declare them', () => {
    const args = {
      password: 'pw-value-1',
      api_key: 'key-value-2',
      apiKey: 'key-value-3',
      token: 'tok-value-4',
      nested: { access_token: 'tok-value-5', Authorization: 'Bearer value-6' },
      list: [{ client_secret: 'sec-value-7' }],
      amount: 12,
    };
    const { preview, forFingerprint } = prepareArguments(args, NO_ARGUMENT_RULES, fingerprinter);
    for (const value of [
      'pw-value-1',
      'key-value-2',
      'key-value-3',
      'tok-value-4',
      'tok-value-5',
      'value-6',
      'sec-value-7',
    ]) {
      expect(preview).not.toContain(value);
    }
    expect(preview).toContain('[redacted]');
    expect(preview).toContain('"amount":12');
    // Undeclared secrets still identify the call (they are not declared secret, so not digested).
    expect(forFingerprint).toMatchObject({ amount: 12, token: 'tok-value-4' });
  });

  it('includes defaults and marks declared secrets', () => {
    const r = rules({ defaults: { currency: 'EUR' }, secrets: ['pin_code'] });
    const { preview } = prepareArguments({ amount: 3, pin_code: '1234' }, r, fingerprinter);
    expect(JSON.parse(preview)).toEqual({ amount: 3, pin_code: '[secret]', currency: 'EUR' });
  });
});

describe('prepareArguments: copies', () => {
  it('does not mutate the caller object', () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        const args = deepFreeze({ keep: a, drop: b, password: 'x', nested: { secret: [1, 2] } });
        const before = JSON.stringify(args);
        const r = rules({
          ignore: ['drop'],
          secrets: ['password', 'nested.secret'],
          defaults: { extra: { d: 1 } },
        });
        prepareArguments(args, r, fingerprinter);
        expect(JSON.stringify(args)).toBe(before);
      }),
    );
  });

  it('is not changed by the caller mutating its object afterwards', () => {
    const defaults = { options: { retries: 2 } };
    const r = rules({ defaults, ignore: ['trace'], secrets: ['password'] });
    const args = { to: ['a@x'], body: { text: 'hi' }, trace: 't', password: 'pw' };
    const prepared = prepareArguments(args, r, fingerprinter);
    const snapshot = structuredClone(prepared);
    const fingerprint = intentOf(args, r);

    args.to.push('b@x');
    args.body.text = 'changed';
    args.password = 'other';
    (args as Record<string, unknown>).added = 1;
    const withDefaults = prepared.forFingerprint as { options: { retries: number } };
    expect(withDefaults.options).not.toBe(defaults.options);
    withDefaults.options.retries = 99;
    expect(defaults.options.retries).toBe(2);

    expect(snapshot.preview).toBe(prepared.preview);
    expect((prepared.forFingerprint as Record<string, unknown>).to).toEqual(['a@x']);
    expect((prepared.forFingerprint as { body: { text: string } }).body.text).toBe('hi');
    expect(
      prepareArguments({ to: ['a@x'], body: { text: 'hi' }, trace: 'zz', password: 'pw' }, r, fingerprinter)
        .forFingerprint,
    ).toEqual(snapshot.forFingerprint);
    expect(intentOf({ to: ['a@x'], body: { text: 'hi' }, password: 'pw' }, r)).toBe(fingerprint);
  });

  it('rejects arguments without a stable identity', () => {
    expect(() => prepareArguments({ n: Number.NaN }, NO_ARGUMENT_RULES, fingerprinter)).toThrow(
      InvalidInputError,
    );
    expect(() => prepareArguments({ d: 1n }, NO_ARGUMENT_RULES, fingerprinter)).toThrow(InvalidInputError);
  });
});

describe('prepareArguments: secret-looking names in previews', () => {
  it('redacts apiKey, access_token, API-KEY, cardNumber; leaves compass, passenger, tokens_used', () => {
    const args = {
      apiKey: 'k1',
      access_token: 'k2',
      'API-KEY': 'k3',
      cardNumber: 'k4',
      compass: 'north',
      passenger: 'ada',
      tokens_used: 12,
    };
    const { preview } = prepareArguments(args, NO_ARGUMENT_RULES, fingerprinter);
    for (const hidden of ['k1', 'k2', 'k3', 'k4']) expect(preview).not.toContain(hidden);
    expect(preview).toContain('north');
    expect(preview).toContain('ada');
    expect(preview).toContain('12');
  });
});
