import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError, type InvalidInputReason } from '../errors.js';
import { type CanonicalLimits, canonicalJson, DEFAULT_CANONICAL_LIMITS, toJsonValue } from './canonical.js';

/** Well-formed unicode strings (no lone surrogates): what a parsed JSON document can hold. */
const json = fc.jsonValue({ stringUnit: 'grapheme', maxDepth: 5 });

/** Sets an own, enumerable member even when the key is `__proto__`. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A deterministic Fisher–Yates shuffle driven by `seed` (mulberry32). */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** The same value with every object's keys inserted in another order, recursively. */
function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, i) => shuffleKeys(item, seed + i + 1));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  const entries = shuffled(Object.entries(value), seed);
  entries.forEach(([key, member], i) => {
    setOwn(out, key, shuffleKeys(member, seed * 31 + i));
  });
  return out;
}

/** The same value with `undefined` members sprinkled into every object. */
function withUndefinedMembers(value: unknown, extra: string): unknown {
  if (Array.isArray(value)) return value.map((item) => withUndefinedMembers(item, extra));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) setOwn(out, key, withUndefinedMembers(member, extra));
  if (!Object.hasOwn(out, extra)) out[extra] = undefined;
  return out;
}

function rejection(fn: () => unknown): InvalidInputError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error('expected an InvalidInputError, nothing was thrown');
}

function expectRejected(value: unknown, reason: InvalidInputReason, path: string, limits?: CanonicalLimits) {
  const error = rejection(() => canonicalJson(value, limits));
  expect(error.reason).toBe(reason);
  expect(error.path).toBe(path);
  expect(error.code).toBe('IDEM_INVALID_INPUT');
  expect(error.message).toContain(`(at ${path || '$'})`);
  // toJsonValue is the same gate, with the same verdict.
  const again = rejection(() => toJsonValue(value, limits));
  expect(again.reason).toBe(reason);
  return error;
}

function nestedArrays(depth: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < depth; i++) value = [value];
  return value;
}

function nestedObjects(depth: number): unknown {
  let value: unknown = {};
  for (let i = 1; i < depth; i++) value = { k: value };
  return value;
}

describe('canonicalJson: one encoding per value', () => {
  it('is insensitive to key order, recursively', () => {
    fc.assert(
      fc.property(json, fc.integer(), (value, seed) => {
        expect(canonicalJson(shuffleKeys(value, seed))).toBe(canonicalJson(value));
      }),
    );
  });

  it('reverses every object and still gives the same text', () => {
    const a = { z: 1, a: { y: [{ q: 1, b: 2 }], c: null }, m: 'x' };
    const b = { m: 'x', a: { c: null, y: [{ b: 2, q: 1 }] }, z: 1 };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson(a)).toBe('{"a":{"c":null,"y":[{"b":2,"q":1}]},"m":"x","z":1}');
  });

  it('is insensitive to whitespace in the source document', () => {
    fc.assert(
      fc.property(json, fc.constantFrom(1, 2, 4, '\t', ' \n '), (value, indent) => {
        const pretty = JSON.parse(JSON.stringify(value, null, indent));
        const compact = JSON.parse(JSON.stringify(value));
        expect(canonicalJson(pretty)).toBe(canonicalJson(compact));
      }),
    );
  });

  it('has no whitespace of its own', () => {
    expect(canonicalJson(JSON.parse('{ "b" : [ 1 , 2 ] ,\n\t"a" : { } }'))).toBe('{"a":{},"b":[1,2]}');
  });

  it('writes 1 and 1.0 (and 1e2 and 100) as one number', () => {
    expect(canonicalJson(JSON.parse('{"n": 1.0}'))).toBe(canonicalJson(JSON.parse('{"n": 1}')));
    expect(canonicalJson(JSON.parse('[1e2, 1.50, 2E-3, -0.0]'))).toBe(
      canonicalJson(JSON.parse('[100, 1.5, 0.002, 0]')),
    );
    expect(canonicalJson(JSON.parse('[1e2, 1.50, 2E-3, -0.0]'))).toBe('[100,1.5,0.002,0]');
  });

  it('writes every spelling of a double as one number', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
        const expected = canonicalJson({ n: d });
        for (const text of [
          String(d),
          d.toExponential(),
          d.toPrecision(17),
          `${d.toExponential()}`.replace('e', 'E'),
        ]) {
          expect(canonicalJson(JSON.parse(`{"n": ${text}}`))).toBe(expected);
        }
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: -1_000_000, max: 1_000_000 }), (n) => {
        const expected = canonicalJson(n);
        expect(expected).toBe(String(n));
        for (const text of [`${n}.0`, `${n}.000`, `${n}e0`, `${n * 10}e-1`, `${n}E+0`]) {
          expect(canonicalJson(JSON.parse(text))).toBe(expected);
        }
      }),
    );
  });

  it('treats {a: undefined} as {}', () => {
    expect(canonicalJson({ a: undefined })).toBe('{}');
    expect(canonicalJson({ a: undefined, b: { c: undefined } })).toBe(canonicalJson({ b: {} }));
    fc.assert(
      fc.property(json, fc.string({ minLength: 1 }), (value, extra) => {
        expect(canonicalJson(withUndefinedMembers(value, extra))).toBe(canonicalJson(value));
      }),
    );
  });

  it('gives equal encodings exactly to equal JSON values', () => {
    // Structural JSON equality, written independently of the encoder: key order
    // does not matter, -0 equals 0, everything else must match exactly.
    const jsonEqual = (a: unknown, b: unknown): boolean => {
      if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
      if (Array.isArray(a) !== Array.isArray(b)) return false;
      const ka = Object.keys(a);
      const kb = Object.keys(b);
      if (ka.length !== kb.length) return false;
      return ka.every(
        (k) =>
          Object.hasOwn(b, k) &&
          jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
      );
    };
    let equal = 0;
    fc.assert(
      fc.property(json, fc.oneof(json, fc.constant(undefined)), fc.integer(), (a, maybeB, seed) => {
        // Half the time b is a reordered copy of a: the "equal" side needs exercising too.
        const b = maybeB === undefined ? shuffleKeys(a, seed) : maybeB;
        const same = jsonEqual(a, b);
        if (same) equal++;
        expect(canonicalJson(a) === canonicalJson(b)).toBe(same);
        // The encoding is a fixed point: parsing it and encoding again changes nothing.
        expect(canonicalJson(JSON.parse(canonicalJson(a)))).toBe(canonicalJson(a));
      }),
      { numRuns: 500 },
    );
    expect(equal).toBeGreaterThan(50);
  });

  it('keeps a JSON "__proto__" member instead of dropping it', () => {
    const parsed = JSON.parse('{"__proto__": {"admin": true}, "b": 2}');
    expect(canonicalJson(parsed)).toBe('{"__proto__":{"admin":true},"b":2}');
    expect(canonicalJson(parsed)).not.toBe(canonicalJson({ b: 2 }));
    expect(canonicalJson(JSON.parse('{"__proto__": 5}'))).toBe('{"__proto__":5}');
    const copy = toJsonValue(parsed) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['__proto__', 'b']);
  });
});

describe('canonicalJson: RFC 8785 behaviours', () => {
  it('sorts keys by UTF-16 code units (RFC 8785 §3.2.3)', () => {
    const value = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    const text = canonicalJson(value);
    // Not code-point order: the emoji (U+1F600, units D83D DE00) sorts before U+FB33.
    // (JSON.parse would move "1" first, so the text itself is checked.)
    expect(text).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('matches the RFC 8785 §3.2.2 example', () => {
    const input =
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
      ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
      ' "literals": [null, true, false]}';
    expect(canonicalJson(JSON.parse(input))).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('formats numbers as ECMAScript does (RFC 8785 appendix B)', () => {
    const cases: [number, string][] = [
      [0, '0'],
      [-0, '0'],
      [1e21, '1e+21'],
      [1e20, '100000000000000000000'],
      [999999999999999900000, '999999999999999900000'],
      [5e-324, '5e-324'],
      [-5e-324, '-5e-324'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
      [-1.7976931348623157e308, '-1.7976931348623157e+308'],
      [9007199254740992, '9007199254740992'],
      [-9007199254740992, '-9007199254740992'],
      [295147905179352830000, '295147905179352830000'],
      [0.000001, '0.000001'],
      [1e-7, '1e-7'],
      [333333333.3333332, '333333333.3333332'],
      [1.5e300, '1.5e+300'],
    ];
    for (const [value, text] of cases) expect(canonicalJson(value)).toBe(text);
    expect(canonicalJson({ z: -0 })).toBe('{"z":0}');
  });

  it('does not escape unicode, and escapes control characters the JSON way', () => {
    expect(canonicalJson({ s: 'é😀\u2028ü€' })).toBe('{"s":"é😀\u2028ü€"}');
    expect(canonicalJson('\u0000\u001f\b\t\n\f\r"\\')).toBe('"\\u0000\\u001f\\b\\t\\n\\f\\r\\"\\\\"');
    expect(canonicalJson('/')).toBe('"/"');
  });

  it('encodes a Date by its toJSON (ISO string)', () => {
    const when = new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 6));
    expect(canonicalJson({ when })).toBe('{"when":"2025-01-02T03:04:05.006Z"}');
    expect(canonicalJson({ when })).toBe(canonicalJson({ when: when.toISOString() }));
    expect(canonicalJson({ x: { toJSON: () => [1, 2] } })).toBe('{"x":[1,2]}');
  });

  it('accepts the same object twice when it is not a cycle', () => {
    const shared = { v: 1 };
    expect(canonicalJson({ a: shared, b: [shared, shared] })).toBe('{"a":{"v":1},"b":[{"v":1},{"v":1}]}');
  });

  it('accepts null-prototype objects (as JSON objects)', () => {
    const bare = Object.create(null) as Record<string, unknown>;
    bare.b = 1;
    bare.a = 2;
    expect(canonicalJson(bare)).toBe('{"a":2,"b":1}');
  });
});

describe('canonicalJson: values without a stable identity are refused', () => {
  it('refuses NaN and infinities, naming the path', () => {
    expectRejected({ a: { b: [1, Number.NaN] } }, 'non_finite_number', 'a.b[1]');
    expectRejected({ x: Number.POSITIVE_INFINITY }, 'non_finite_number', 'x');
    expectRejected([Number.NEGATIVE_INFINITY], 'non_finite_number', '[0]');
    expectRejected(Number.NaN, 'non_finite_number', '');
  });

  it('refuses lone surrogates in values and in keys', () => {
    expectRejected({ note: 'ok \ud800 not ok' }, 'lone_surrogate', 'note');
    expectRejected({ list: ['fine', '\udc00'] }, 'lone_surrogate', 'list[1]');
    expectRejected({ a: { 'key\ud83d': 1 } }, 'lone_surrogate', 'a');
    expectRejected({ '\udfff': 1 }, 'lone_surrogate', '');
    // A proper pair is fine.
    expect(canonicalJson({ '\ud83d\ude00': '\ud83d\ude00' })).toBe('{"😀":"😀"}');
  });

  it('refuses cycles through objects and arrays', () => {
    const object: Record<string, unknown> = { a: { b: 1 } };
    (object.a as Record<string, unknown>).self = object;
    expectRejected(object, 'cycle', 'a.self');

    const array: unknown[] = [1, 2];
    array.push(array);
    expectRejected(array, 'cycle', '[2]');

    const mixed: Record<string, unknown> = { list: [] };
    (mixed.list as unknown[]).push({ back: mixed.list });
    expectRejected(mixed, 'cycle', 'list[0].back');
  });

  it('refuses 10 000 nested arrays or objects without overflowing the stack', () => {
    const arrays = expectRejected(
      nestedArrays(10_000),
      'too_deep',
      '[0]'.repeat(DEFAULT_CANONICAL_LIMITS.maxDepth),
    );
    expect(arrays.message).toContain('64');
    expectRejected(
      nestedObjects(10_000),
      'too_deep',
      Array(DEFAULT_CANONICAL_LIMITS.maxDepth).fill('k').join('.'),
    );
  });

  it('accepts nesting of exactly maxDepth and refuses one more', () => {
    const max = DEFAULT_CANONICAL_LIMITS.maxDepth;
    expect(canonicalJson(nestedArrays(max))).toBe(`${'['.repeat(max)}${']'.repeat(max)}`);
    expect(() => canonicalJson(nestedObjects(max))).not.toThrow();
    expectRejected(nestedArrays(max + 1), 'too_deep', '[0]'.repeat(max));

    const small: CanonicalLimits = { ...DEFAULT_CANONICAL_LIMITS, maxDepth: 3 };
    expect(canonicalJson({ a: [{}] }, small)).toBe('{"a":[{}]}');
    expect(canonicalJson({ a: [1, 'x', null] }, small)).toBe('{"a":[1,"x",null]}');
    expectRejected({ a: [{ b: [] }] }, 'too_deep', 'a[0].b', small);
  });

  it('refuses too many values', () => {
    const limits: CanonicalLimits = { ...DEFAULT_CANONICAL_LIMITS, maxNodes: 10 };
    // 1 object + 9 members = 10 values: allowed.
    const nine = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, i]));
    expect(() => canonicalJson(nine, limits)).not.toThrow();
    expect(rejection(() => canonicalJson({ ...nine, k9: 9 }, limits)).reason).toBe('too_large');
    expect(rejection(() => canonicalJson(Array(10).fill(0), limits)).reason).toBe('too_large');

    const big = Array.from({ length: DEFAULT_CANONICAL_LIMITS.maxNodes }, () => 1);
    expect(rejection(() => canonicalJson(big)).reason).toBe('too_large');
    expect(() => canonicalJson(big.slice(1))).not.toThrow();
    expect(rejection(() => canonicalJson({ list: big.map((n) => ({ n })) })).reason).toBe('too_large');
  });

  it('refuses a huge sparse array at once instead of walking it', () => {
    const started = Date.now();
    expect(rejection(() => canonicalJson({ a: new Array(50_000_000) })).reason).toBe('too_large');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('refuses holes in arrays rather than encoding them as null', () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point
    expectRejected([1, , 3], 'unsupported_type', '[1]');
  });

  it('refuses too many bytes', () => {
    expectRejected({ blob: 'x'.repeat(5 * 1024 * 1024) }, 'too_large', 'blob');
    // Under the limit in UTF-16 units, over it in UTF-8 bytes: caught on the encoding.
    const wide = 'é'.repeat(2.2 * 1024 * 1024);
    const error = rejection(() => canonicalJson({ wide }));
    expect(error.reason).toBe('too_large');
    expect(error.path).toBe('');
    // Many small strings add up.
    const limits: CanonicalLimits = { ...DEFAULT_CANONICAL_LIMITS, maxBytes: 100 };
    expect(rejection(() => canonicalJson(Array(11).fill('abcdefghij'), limits)).reason).toBe('too_large');
    expect(() => canonicalJson(Array(5).fill('abcdefghij'), limits)).not.toThrow();
  });

  it('refuses values JSON has no form for', () => {
    expectRejected({ n: 10n }, 'unsupported_type', 'n');
    expectRejected({ f: () => 1 }, 'unsupported_type', 'f');
    expectRejected({ s: Symbol('s') }, 'unsupported_type', 's');
    expectRejected([1, undefined], 'unsupported_type', '[1]');
    expectRejected([() => 1], 'unsupported_type', '[0]');
    expectRejected([Symbol('s')], 'unsupported_type', '[0]');
    expectRejected(undefined, 'unsupported_type', '');
    expectRejected(5n, 'unsupported_type', '');
  });

  it('refuses Maps, Sets, class instances and boxed values', () => {
    class Order {
      id = 1;
    }
    expect(expectRejected({ m: new Map([['a', 1]]) }, 'unsupported_type', 'm').message).toContain('Map');
    expectRejected({ s: new Set([1]) }, 'unsupported_type', 's');
    expect(expectRejected({ o: new Order() }, 'unsupported_type', 'o').message).toContain('Order');
    expectRejected([new Uint8Array(2)], 'unsupported_type', '[0]');
    expectRejected({ n: new Number(1) }, 'unsupported_type', 'n');
    expectRejected(/re/, 'unsupported_type', '');
  });

  it('encodes an invalid Date as null, as JSON.stringify does', () => {
    // An invalid Date's toJSON returns null: encoded as null, like JSON.stringify.
    expect(canonicalJson({ d: new Date(Number.NaN) })).toBe('{"d":null}');
  });
});

describe('toJsonValue', () => {
  it('returns a plain copy and never mutates its input', () => {
    fc.assert(
      fc.property(json, (value) => {
        const before = JSON.stringify(value);
        const copy = toJsonValue(value);
        expect(JSON.stringify(copy)).toBe(before);
        expect(JSON.stringify(value)).toBe(before);
        if (value !== null && typeof value === 'object') expect(copy).not.toBe(value);
      }),
    );
  });

  it('drops undefined members and applies toJSON', () => {
    expect(toJsonValue({ a: undefined, b: new Date(0), c: [{ d: undefined }] })).toEqual({
      b: '1970-01-01T00:00:00.000Z',
      c: [{}],
    });
  });
});
