import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type RequestKeyParts, renderRequestId, requestKey } from './request-key.js';

/** Strings chosen to break naive separators and escaping. */
const nasty = [
  '',
  '1',
  '12',
  '2/3',
  '3',
  '7',
  '/',
  ':',
  's:1',
  'null',
  'no-session',
  '\u0000no-session',
  '\u0000',
  '"',
  '","',
  '\\',
  '\\"',
  ',',
  '[',
  ']',
  '["a"]',
  'é',
  'e\u0301',
  '😀',
  '\ud800',
  'tools/call',
];

const text = fc.oneof(fc.constantFrom(...nasty), fc.string({ unit: 'binary', maxLength: 8 }));
/** Ids past the bound (keyed by their digest, identity/client-text.ts), differing only at their ends. */
const long = fc.constantFrom('x'.repeat(200), `${'x'.repeat(199)}y`, 'x'.repeat(201), `y${'x'.repeat(199)}`);
const id = fc.oneof(
  fc.constantFrom<string | number>('7', 7, '7.0', 7.5, '7.5', 0, -0, '0', '-0', 1e21, '1e+21', '', '2/3'),
  long,
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  text,
);
const parts: fc.Arbitrary<RequestKeyParts> = fc.record(
  {
    actor: fc.oneof(fc.constantFrom('alice', 'bob'), text),
    session: fc.oneof(fc.constant(null), fc.constantFrom('1', '12', 's'), text),
    id,
    method: fc.oneof(fc.constantFrom('tools/call', 'prompts/get'), text),
    tool: fc.oneof(fc.constantFrom('send', 'refund'), text, long),
  },
  { requiredKeys: ['actor', 'session', 'id'] },
);

/**
 * What makes two requests the same, written independently of the encoding:
 * actor, session and the rendered id; with no session, also method and tool.
 */
function sameRequest(a: RequestKeyParts, b: RequestKeyParts): boolean {
  if (a.actor !== b.actor || a.session !== b.session || `${a.id}` !== `${b.id}`) return false;
  if (a.session !== null) return true;
  return (a.method ?? '') === (b.method ?? '') && (a.tool ?? '') === (b.tool ?? '');
}

describe('requestKey', () => {
  it('is equal exactly when the requests are the same (random tuples)', () => {
    let equal = 0;
    let different = 0;
    fc.assert(
      fc.property(
        parts,
        parts,
        fc.subarray(['actor', 'session', 'id', 'method', 'tool'] as const),
        (a, donor, taken) => {
          // b is a with some parts taken from another random tuple: near-misses are the interesting cases.
          const b: RequestKeyParts = { ...a };
          for (const part of taken) (b as unknown as Record<string, unknown>)[part] = donor[part];
          const same = sameRequest(a, b);
          if (same) equal++;
          else different++;
          expect(requestKey(a) === requestKey(b)).toBe(same);
          // Unrelated tuples too.
          expect(requestKey(a) === requestKey(donor)).toBe(sameRequest(a, donor));
        },
      ),
      { numRuns: 3_000 },
    );
    expect(equal).toBeGreaterThan(100);
    expect(different).toBeGreaterThan(100);
  });

  it('never collides when text moves across the boundaries between parts', () => {
    // Characters a naive separator or escaping would trip over.
    const unit = fc.constantFrom(
      'a',
      '1',
      '2',
      '/',
      ',',
      ':',
      's',
      '"',
      '\\',
      '[',
      ']',
      '\u0000',
      'é',
      '😀',
      '\ud800',
    );
    const piece = fc.string({ unit, maxLength: 6 });
    // Pick two cut points in the concatenation of the parts and cut it up again.
    const recut = (joined: string, cut1: number, cut2: number): [string, string, string] => {
      const [i, j] = [cut1 % (joined.length + 1), cut2 % (joined.length + 1)].sort((x, y) => x - y) as [
        number,
        number,
      ];
      return [joined.slice(0, i), joined.slice(i, j), joined.slice(j)];
    };
    let collisionsTried = 0;
    fc.assert(
      fc.property(piece, piece, piece, fc.nat(), fc.nat(), (actor, session, id, cut1, cut2) => {
        const [actor2, session2, id2] = recut(actor + session + id, cut1, cut2);
        const same = actor === actor2 && session === session2 && id === id2;
        if (!same) collisionsTried++;
        expect(
          requestKey({ actor, session, id }) === requestKey({ actor: actor2, session: session2, id: id2 }),
        ).toBe(same);
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(piece, piece, piece, fc.nat(), fc.nat(), (id, method, tool, cut1, cut2) => {
        const [id2, method2, tool2] = recut(id + method + tool, cut1, cut2);
        const same = id === id2 && method === method2 && tool === tool2;
        const a = requestKey({ actor: 'a', session: null, id, method, tool });
        const b = requestKey({ actor: 'a', session: null, id: id2, method: method2, tool: tool2 });
        expect(a === b).toBe(same);
      }),
      { numRuns: 2_000 },
    );
    expect(collisionsTried).toBeGreaterThan(500);
  });

  it('does not let a session and an id run into each other', () => {
    const a = requestKey({ actor: 'alice', session: '1', id: '2/3' });
    const b = requestKey({ actor: 'alice', session: '12', id: '3' });
    const c = requestKey({ actor: 'alice', session: '1', id: '2' });
    expect(a).not.toBe(b);
    expect(a).not.toBe(c);
    expect(requestKey({ actor: 'a/b', session: 'c', id: 1 })).not.toBe(
      requestKey({ actor: 'a', session: 'b/c', id: 1 }),
    );
    expect(requestKey({ actor: 'a', session: 'b', id: 'c' })).not.toBe(
      requestKey({ actor: 'a', session: 'b","c', id: '' }),
    );
  });

  it('handles ids with quotes, commas, brackets, NUL and unicode', () => {
    const ids = [
      '"',
      '","',
      '"]',
      '[',
      ']',
      ',',
      '\u0000',
      '\u0000\u0000',
      'é',
      'e\u0301',
      '😀',
      '\\',
      '\\"',
      '\ud800',
    ];
    const keys = ids.map((value) => requestKey({ actor: 'alice', session: 's', id: value }));
    expect(new Set(keys).size).toBe(ids.length);
    for (const [i, key] of keys.entries()) {
      // Deterministic, and the id can be read back out of the key unchanged.
      expect(requestKey({ actor: 'alice', session: 's', id: ids[i] as string })).toBe(key);
      expect((JSON.parse(key) as string[])[2]).toBe(ids[i]);
    }
    // Shifting a quote or comma between actor, session and id never collides.
    expect(requestKey({ actor: 'a"', session: 's', id: 'x' })).not.toBe(
      requestKey({ actor: 'a', session: '"s', id: 'x' }),
    );
    expect(requestKey({ actor: 'a', session: 's,', id: 'x' })).not.toBe(
      requestKey({ actor: 'a', session: 's', id: ',x' }),
    );
  });

  it('takes a numeric and a string id that render the same as one key', () => {
    expect(requestKey({ actor: 'a', session: 's', id: 7 })).toBe(
      requestKey({ actor: 'a', session: 's', id: '7' }),
    );
    expect(requestKey({ actor: 'a', session: null, id: 7, method: 'tools/call', tool: 't' })).toBe(
      requestKey({ actor: 'a', session: null, id: '7', method: 'tools/call', tool: 't' }),
    );
    expect(requestKey({ actor: 'a', session: 's', id: 7 })).not.toBe(
      requestKey({ actor: 'a', session: 's', id: '7.0' }),
    );
    expect(requestKey({ actor: 'a', session: 's', id: 7 })).not.toBe(
      requestKey({ actor: 'a', session: 's', id: 8 }),
    );
    expect(renderRequestId(7)).toBe('7');
    expect(renderRequestId(JSON.parse('7.0') as number)).toBe('7');
    expect(renderRequestId('007')).toBe('007');
    expect(renderRequestId(-0)).toBe('0');
    expect(renderRequestId(1e21)).toBe('1e+21');
  });

  it('uses method and tool only when there is no session', () => {
    const inSession = { actor: 'a', session: 's', id: 1 };
    expect(requestKey({ ...inSession, method: 'tools/call', tool: 'send' })).toBe(
      requestKey({ ...inSession, method: 'other', tool: 'refund' }),
    );
    expect(requestKey({ ...inSession, tool: 'send' })).toBe(requestKey(inSession));

    const stateless = { actor: 'a', session: null, id: 1 };
    expect(requestKey({ ...stateless, method: 'tools/call', tool: 'send' })).not.toBe(
      requestKey({ ...stateless, method: 'tools/call', tool: 'refund' }),
    );
    expect(requestKey({ ...stateless, method: 'tools/call', tool: 'send' })).not.toBe(
      requestKey({ ...stateless, method: 'prompts/get', tool: 'send' }),
    );
    expect(requestKey({ ...stateless, method: 'ab', tool: 'c' })).not.toBe(
      requestKey({ ...stateless, method: 'a', tool: 'bc' }),
    );
  });

  it('never confuses "no session" with any session id', () => {
    for (const session of ['', 'null', 'no-session', '\u0000no-session', 's:', '\u0000']) {
      expect(requestKey({ actor: 'a', session, id: 1 })).not.toBe(
        requestKey({ actor: 'a', session: null, id: 1, method: '', tool: '' }),
      );
    }
    // Even a session whose id spells the null encoding plus method and tool.
    expect(requestKey({ actor: 'a', session: '\u0000no-session", "1", "m', id: 't' })).not.toBe(
      requestKey({ actor: 'a', session: null, id: 1, method: 'm', tool: 't' }),
    );
  });
});

describe('requestKey: known answers (keys are stored in receipts and journal request refs)', () => {
  // Spelled out as literals: a change to the rendering strands every stored receipt and request ref.
  it('with a session: actor, "s:" + session, the rendered id', () => {
    expect(requestKey({ actor: 'user:alice', session: 'S1', id: 7 })).toBe('["user:alice","s:S1","7"]');
    expect(requestKey({ actor: 'user:alice', session: 'S1', id: '7' })).toBe('["user:alice","s:S1","7"]');
    // Method and tool are not part of a session-scoped key.
    expect(requestKey({ actor: 'user:alice', session: 'S1', id: 7, method: 'tools/call', tool: 'x' })).toBe(
      '["user:alice","s:S1","7"]',
    );
  });

  it('without a session: a NUL-tagged marker, then method and tool', () => {
    expect(
      requestKey({
        actor: 'user:alice',
        session: null,
        id: 'req-"1"',
        method: 'tools/call',
        tool: 'charge_card',
      }),
    ).toBe('["user:alice","\\u0000no-session","req-\\"1\\"","tools/call","charge_card"]');
    expect(requestKey({ actor: 'user:alice', session: null, id: 7 })).toBe(
      '["user:alice","\\u0000no-session","7","",""]',
    );
  });

  it('renders ids as JSON-RPC reads them', () => {
    expect(renderRequestId(7)).toBe('7');
    expect(renderRequestId(-0)).toBe('0');
    expect(renderRequestId(7.5)).toBe('7.5');
    expect(renderRequestId(1e21)).toBe('1e+21');
    expect(renderRequestId('07')).toBe('07');
  });
});
