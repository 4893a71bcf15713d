import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import type { JsonValue } from '../identity/canonical.js';
import { canonicalJson } from '../identity/canonical.js';
import { resolveContract } from './contract.js';
import { intentScopeValue, type ScopeContext } from './scope.js';

const ctx: ScopeContext = { session: 'sess-1', now: Date.UTC(2025, 0, 1, 12, 0, 0) };

function missingKey(fn: () => unknown): InvalidInputError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error('expected an InvalidInputError');
}

describe('intentScopeValue', () => {
  it('actor: the same for every session and time', () => {
    expect(intentScopeValue({ kind: 'actor' }, { a: 1 }, ctx)).toEqual({ kind: 'actor' });
    expect(intentScopeValue({ kind: 'actor' }, {}, { session: null, now: 0 })).toEqual({ kind: 'actor' });
  });

  it('session: carries the session, so another session is another intent', () => {
    expect(intentScopeValue({ kind: 'session' }, {}, ctx)).toEqual({ kind: 'session', session: 'sess-1' });
    expect(intentScopeValue({ kind: 'session' }, {}, { session: null, now: 0 })).toEqual({
      kind: 'session',
      session: null,
    });
    const a = canonicalJson(intentScopeValue({ kind: 'session' }, {}, { ...ctx, session: 's1' }));
    const b = canonicalJson(intentScopeValue({ kind: 'session' }, {}, { ...ctx, session: 's2' }));
    expect(a).not.toBe(b);
    // The session, not the clock.
    expect(intentScopeValue({ kind: 'session' }, {}, { ...ctx, now: ctx.now + 10 ** 9 })).toEqual(
      intentScopeValue({ kind: 'session' }, {}, ctx),
    );
  });

  it('window: one bucket per window, changing exactly at the boundary', () => {
    const scope = { kind: 'window', ms: 60_000 } as const;
    const at = (now: number) => intentScopeValue(scope, {}, { session: null, now });
    expect(at(0)).toEqual({ kind: 'window', ms: 60_000, bucket: 0 });
    expect(at(59_999)).toEqual(at(0));
    expect(at(60_000)).toEqual({ kind: 'window', ms: 60_000, bucket: 1 });
    expect(at(60_000)).not.toEqual(at(59_999));
    expect(at(119_999)).toEqual(at(60_000));
    // A window resolved from a contract behaves the same.
    const resolved = resolveContract({ replay: 'review', scope: { window: '15m' } }, undefined).scope;
    const boundary = 15 * 60_000 * 1_000_000;
    const before = intentScopeValue(resolved, {}, { session: null, now: boundary - 1 });
    const after = intentScopeValue(resolved, {}, { session: null, now: boundary });
    expect(canonicalJson(before)).not.toBe(canonicalJson(after));
  });

  it('window: same bucket iff the same floor(now / ms)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 24 * 3_600_000 }),
        fc.integer({ min: 0, max: 4_000_000_000_000 }),
        fc.integer({ min: 0, max: 4_000_000_000_000 }),
        (ms, t1, t2) => {
          const scope = { kind: 'window', ms } as const;
          const v1 = canonicalJson(intentScopeValue(scope, {}, { session: null, now: t1 }));
          const v2 = canonicalJson(intentScopeValue(scope, {}, { session: null, now: t2 }));
          expect(v1 === v2).toBe(Math.floor(t1 / ms) === Math.floor(t2 / ms));
          // The next bucket starts exactly one window after this one's start.
          const start = Math.floor(t1 / ms) * ms;
          const at = (now: number) => canonicalJson(intentScopeValue(scope, {}, { session: null, now }));
          expect(at(start)).toBe(v1);
          expect(at(start + ms - 1)).toBe(v1);
          expect(at(start + ms)).not.toBe(v1);
        },
      ),
    );
  });

  it('business_key: takes the value at the path', () => {
    const scope = { kind: 'business_key', path: 'order.id', shared: false } as const;
    const args: JsonValue = { order: { id: 'ord_42', amount: 3 }, note: 'x' };
    expect(intentScopeValue(scope, args, ctx)).toEqual({
      kind: 'business_key',
      path: 'order.id',
      value: 'ord_42',
    });
    // Only the key matters: other arguments, the session and the clock do not.
    expect(
      intentScopeValue(scope, { order: { id: 'ord_42', amount: 99 } }, { session: 'other', now: 0 }),
    ).toEqual(intentScopeValue(scope, args, ctx));
    expect(intentScopeValue(scope, { order: { id: 'ord_43' } }, ctx)).not.toEqual(
      intentScopeValue(scope, args, ctx),
    );
    expect(
      intentScopeValue({ kind: 'business_key', path: 'invoice', shared: false }, { invoice: 7 }, ctx),
    ).toEqual({
      kind: 'business_key',
      path: 'invoice',
      value: 7,
    });
    expect(
      intentScopeValue(
        { kind: 'business_key', path: 'lines.1.sku', shared: false },
        { lines: [{ sku: 'a' }, { sku: 'b' }] },
        ctx,
      ),
    ).toEqual({ kind: 'business_key', path: 'lines.1.sku', value: 'b' });
    expect(
      intentScopeValue({ kind: 'business_key', path: 'ref', shared: false }, { ref: { a: [1] } }, ctx),
    ).toEqual({
      kind: 'business_key',
      path: 'ref',
      value: { a: [1] },
    });
  });

  it('business_key: falsy values are still keys', () => {
    for (const value of [0, '', false]) {
      expect(intentScopeValue({ kind: 'business_key', path: 'k', shared: false }, { k: value }, ctx)).toEqual(
        {
          kind: 'business_key',
          path: 'k',
          value,
        },
      );
    }
  });

  it('business_key: a missing key is refused with missing_business_key', () => {
    const cases: [string, JsonValue][] = [
      ['order.id', {}],
      ['order.id', { order: {} }],
      ['order.id', { order: null }],
      ['order.id', { order: 'ord_42' }],
      ['order.id', { order: { id: null } }],
      ['order.id', null],
      ['order.id', []],
      ['lines.5.sku', { lines: [{ sku: 'a' }] }],
      ['lines.x', { lines: [1] }],
      // Not own members of the arguments: must not be read off a prototype or an array.
      ['toString', {}],
      ['constructor', { a: 1 }],
      ['order.__proto__', { order: {} }],
      ['lines.length', { lines: [1, 2] }],
      ['lines.01', { lines: [1, 2] }],
    ];
    for (const [path, args] of cases) {
      const error = missingKey(() =>
        intentScopeValue({ kind: 'business_key', path, shared: false }, args, ctx),
      );
      expect(error.reason).toBe('missing_business_key');
      expect(error.path).toBe(path);
      expect(error.code).toBe('IDEM_INVALID_INPUT');
      expect(error.message).toContain(path);
    }
  });

  it('gives each kind a distinct value', () => {
    const values = [
      intentScopeValue({ kind: 'actor' }, { k: 1 }, ctx),
      intentScopeValue({ kind: 'session' }, { k: 1 }, ctx),
      intentScopeValue({ kind: 'window', ms: 60_000 }, { k: 1 }, ctx),
      intentScopeValue({ kind: 'business_key', path: 'k', shared: false }, { k: 1 }, ctx),
    ].map((v) => canonicalJson(v));
    expect(new Set(values).size).toBe(4);
  });
});
