import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { FINGERPRINT_KEY_FILE } from '../defaults.js';
import { InvalidInputError } from '../errors.js';
import { type ArgumentRules, NO_ARGUMENT_RULES } from './argument-rules.js';
import { prepareArguments } from './arguments.js';
import { canonicalJson, type JsonValue } from './canonical.js';
import {
  type BusinessKeyRecord,
  type CanonicalActionRecord,
  Fingerprinter,
  type ServerRecord,
} from './fingerprint.js';

const fingerprinter = new Fingerprinter(randomBytes(32));

const json = fc.jsonValue({ stringUnit: 'grapheme', maxDepth: 4 }) as fc.Arbitrary<JsonValue>;
const jsonObject = fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 6 }), json, { maxKeys: 6 });

const base: CanonicalActionRecord = {
  actor: 'user:alice',
  tool: 'create_invoice',
  channel: 'mcp',
  target: 'billing',
  credential_ref: 'vault:billing',
  method: 'tools/call',
  arguments: { customer: 'c_1', amount: 100 },
  intent_scope: { kind: 'actor' },
};

/** The fingerprint of a call with these arguments, through the same path the engine takes. */
function intentOf(args: unknown, rules: ArgumentRules = NO_ARGUMENT_RULES, fp = fingerprinter): string {
  return fp.intent({ ...base, arguments: prepareArguments(args, rules, fp).forFingerprint });
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The same value with every object's keys inserted in reverse or rotated order, recursively. */
function reorderKeys(value: unknown, rotate: number): unknown {
  if (Array.isArray(value)) return value.map((item) => reorderKeys(item, rotate + 1));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value).reverse();
  const shift = entries.length === 0 ? 0 : rotate % entries.length;
  const out: Record<string, unknown> = {};
  for (const [key, member] of [...entries.slice(shift), ...entries.slice(0, shift)]) {
    setOwn(out, key, reorderKeys(member, rotate + 1));
  }
  return out;
}

function sprinkleUndefined(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sprinkleUndefined);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) setOwn(out, key, sprinkleUndefined(member));
  if (!Object.hasOwn(out, '~absent')) out['~absent'] = undefined;
  return out;
}

describe('Fingerprinter.intent: equivalent calls give ONE fingerprint', () => {
  it('has the documented shape', () => {
    expect(fingerprinter.intent(base)).toMatch(/^fp_[A-Za-z0-9_-]{43}$/);
    expect(fingerprinter.intent(base)).toBe(fingerprinter.intent(structuredClone(base)));
  });

  it('ignores key order, recursively', () => {
    fc.assert(
      fc.property(jsonObject, fc.nat(), (args, rotate) => {
        expect(intentOf(reorderKeys(args, rotate))).toBe(intentOf(args));
      }),
    );
    // And in the record itself.
    const reversed = Object.fromEntries(Object.entries(base).reverse()) as unknown as CanonicalActionRecord;
    expect(fingerprinter.intent(reversed)).toBe(fingerprinter.intent(base));
  });

  it('ignores whitespace of the source document', () => {
    fc.assert(
      fc.property(jsonObject, fc.constantFrom(2, 4, '\t', '\n  '), (args, indent) => {
        const pretty = JSON.parse(JSON.stringify(args, null, indent));
        const compact = JSON.parse(JSON.stringify(args));
        expect(intentOf(pretty)).toBe(intentOf(compact));
      }),
    );
  });

  it('takes 1 and 1.0, 1e2 and 100 as one number', () => {
    expect(intentOf(JSON.parse('{"qty": 1.0}'))).toBe(intentOf(JSON.parse('{"qty": 1}')));
    expect(intentOf(JSON.parse('{"amount": 1e2}'))).toBe(intentOf(JSON.parse('{"amount": 100}')));
    expect(intentOf(JSON.parse('{"amount": 1E+2, "rate": 0.50}'))).toBe(intentOf({ amount: 100, rate: 0.5 }));
    expect(intentOf({ delta: -0 })).toBe(intentOf({ delta: 0 }));
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
        const spellings = [String(d), d.toExponential(), d.toPrecision(17)];
        const fps = spellings.map((text) => intentOf(JSON.parse(`{"x": ${text}}`)));
        expect(new Set(fps).size).toBe(1);
      }),
    );
    expect(intentOf({ qty: 1 })).not.toBe(intentOf({ qty: 1.5 }));
    expect(intentOf({ qty: 1 })).not.toBe(intentOf({ qty: '1' }));
  });

  it('takes a default given and a default omitted as one intent', () => {
    fc.assert(
      fc.property(jsonObject, json, json, (args, fallback, other) => {
        const rules: ArgumentRules = { ignore: [], secrets: [], defaults: { mode: fallback } };
        const { mode: _dropped, ...without } = args;
        const omitted = intentOf(without, rules);
        expect(intentOf({ ...without, mode: fallback }, rules)).toBe(omitted);
        expect(intentOf({ ...without, mode: undefined }, rules)).toBe(omitted);
        // A value other than the default is another intent.
        if (canonicalJson(other) !== canonicalJson(fallback)) {
          expect(intentOf({ ...without, mode: other }, rules)).not.toBe(omitted);
        }
      }),
    );
  });

  it('fills in defaults whose names are also Object.prototype members', () => {
    const rules: ArgumentRules = { ignore: [], secrets: [], defaults: { constructor: 'x', toString: 1 } };
    expect(intentOf({}, rules)).toBe(intentOf({ constructor: 'x', toString: 1 }, rules));
    expect(intentOf({}, rules)).not.toBe(intentOf({ constructor: 'y' }, rules));
    expect(prepareArguments({}, rules, fingerprinter).forFingerprint).toEqual({
      constructor: 'x',
      toString: 1,
    });
  });

  it('drops ignored fields', () => {
    const rules: ArgumentRules = {
      ignore: ['trace_id', 'meta.note', 'lines.*.comment'],
      secrets: [],
      defaults: {},
    };
    fc.assert(
      fc.property(json, json, json, (traceId, note, comment) => {
        const plain = { customer: 'c_1', meta: { priority: 2 }, lines: [{ sku: 'a' }, { sku: 'b' }] };
        const noisy = {
          customer: 'c_1',
          trace_id: traceId,
          meta: { priority: 2, note },
          lines: [
            { sku: 'a', comment },
            { sku: 'b', comment: traceId },
          ],
        };
        expect(intentOf(noisy, rules)).toBe(intentOf(plain, rules));
      }),
    );
    // A field that is not ignored still counts.
    expect(intentOf({ customer: 'c_1', trace: 1 }, rules)).not.toBe(intentOf({ customer: 'c_1' }, rules));
  });

  it('takes {a: undefined} as {}', () => {
    expect(intentOf({ a: undefined })).toBe(intentOf({}));
    expect(intentOf(undefined)).toBe(intentOf({}));
    fc.assert(
      fc.property(jsonObject, (args) => {
        expect(intentOf(sprinkleUndefined(args))).toBe(intentOf(args));
      }),
    );
  });
});

describe('Fingerprinter.intent: different intents give different fingerprints', () => {
  const small = (values: string[]) => fc.constantFrom(...values);
  const record = fc.record({
    actor: small(['alice', 'bob', 'Alice']),
    tool: small(['send', 'Send', 'refund']),
    channel: small(['library', 'mcp', 'http']),
    target: small(['billing', 'https://x/{id}', '']),
    credential_ref: fc.constantFrom(null, 'vault:a', 'null', ''),
    method: small(['tools/call', 'POST']),
    arguments: fc.oneof(
      fc.constantFrom<JsonValue>({}, { a: 1 }, { a: '1' }, { a: 1, b: null }, [], null),
      json,
    ) as fc.Arbitrary<JsonValue>,
    intent_scope: fc.constantFrom<JsonValue>(
      { kind: 'actor' },
      { kind: 'session', session: 's1' },
      { kind: 'session', session: null },
      { kind: 'window', ms: 60_000, bucket: 1 },
      { kind: 'window', ms: 60_000, bucket: 2 },
    ),
  });

  const recordFields = Object.keys(base) as (keyof CanonicalActionRecord)[];

  it('for random records: equal canonical JSON iff equal fingerprint', () => {
    let equalPairs = 0;
    let differentPairs = 0;
    fc.assert(
      fc.property(record, record, fc.subarray(recordFields), (r1, donor, taken) => {
        // r2 is r1 with some fields taken from another random record: often equal, often close.
        const r2 = { ...r1 };
        for (const field of taken) (r2 as Record<string, unknown>)[field] = donor[field];
        const same = canonicalJson(r1) === canonicalJson(r2);
        if (same) equalPairs++;
        else differentPairs++;
        expect(fingerprinter.intent(r1) === fingerprinter.intent(r2)).toBe(same);
      }),
      { numRuns: 2_000 },
    );
    // Both sides of the iff were exercised.
    expect(equalPairs).toBeGreaterThan(0);
    expect(differentPairs).toBeGreaterThan(0);
  });

  const fields: [keyof CanonicalActionRecord, fc.Arbitrary<unknown>][] = [
    ['actor', fc.string({ unit: 'grapheme' })],
    ['tool', fc.string({ unit: 'grapheme' })],
    ['channel', fc.string({ unit: 'grapheme' })],
    ['target', fc.string({ unit: 'grapheme' })],
    ['credential_ref', fc.option(fc.string({ unit: 'grapheme' }), { nil: null })],
    ['method', fc.string({ unit: 'grapheme' })],
    ['intent_scope', json],
    ['arguments', json],
  ];
  for (const [field, values] of fields) {
    it(`changes when only ${field} changes`, () => {
      fc.assert(
        fc.property(values, values, (v1, v2) => {
          fc.pre(canonicalJson(v1) !== canonicalJson(v2));
          const r1 = { ...base, [field]: v1 } as CanonicalActionRecord;
          const r2 = { ...base, [field]: v2 } as CanonicalActionRecord;
          expect(fingerprinter.intent(r1)).not.toBe(fingerprinter.intent(r2));
        }),
      );
      expect(fingerprinter.intent({ ...base, [field]: `${String(base[field])}x` })).not.toBe(
        fingerprinter.intent(base),
      );
    });
  }

  it('does not confuse members across fields', () => {
    const a = { ...base, actor: 'a', tool: 'bc' };
    const b = { ...base, actor: 'ab', tool: 'c' };
    expect(fingerprinter.intent(a)).not.toBe(fingerprinter.intent(b));
    expect(fingerprinter.intent({ ...base, credential_ref: null })).not.toBe(
      fingerprinter.intent({ ...base, credential_ref: 'null' }),
    );
  });

  it('depends on the installation key', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 64 }),
        fc.uint8Array({ minLength: 32, maxLength: 64 }),
        (k1, k2) => {
          fc.pre(Buffer.compare(Buffer.from(k1), Buffer.from(k2)) !== 0);
          const a = new Fingerprinter(Buffer.from(k1));
          const b = new Fingerprinter(Buffer.from(k2));
          expect(a.intent(base)).not.toBe(b.intent(base));
          expect(a.secret('hunter2')).not.toBe(b.secret('hunter2'));
        },
      ),
      { numRuns: 50 },
    );
    const key = randomBytes(32);
    expect(new Fingerprinter(key).intent(base)).toBe(new Fingerprinter(Buffer.from(key)).intent(base));
  });

  it('keeps its own copy of the key', () => {
    const key = randomBytes(32);
    const fp = new Fingerprinter(key);
    const before = fp.intent(base);
    key.fill(0);
    expect(fp.intent(base)).toBe(before);
  });

  it('refuses a short key', () => {
    expect(() => new Fingerprinter(randomBytes(31))).toThrow(/at least 32 bytes/);
    expect(() => new Fingerprinter(Buffer.alloc(0))).toThrow(/at least 32 bytes/);
  });
});

describe('Fingerprinter: what the fingerprint reveals', () => {
  it('contains no argument text', () => {
    const args = {
      note: 'CONFIDENTIAL-order-for-ACME-Corp',
      card: '4111111111111111',
      who: 'alice@example.com',
    };
    const fp = intentOf(args);
    expect(fp).toMatch(/^fp_[A-Za-z0-9_-]{43}$/);
    for (const text of [...Object.values(args), ...Object.keys(args), base.actor, base.tool]) {
      expect(fp).not.toContain(text);
    }
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1 }), (text) => {
        const marked = `«${text}»`;
        const result = intentOf({ text: marked });
        expect(result).toMatch(/^fp_[A-Za-z0-9_-]{43}$/);
        expect(result).not.toContain(marked);
      }),
    );
  });

  it('separates domains', () => {
    const text = canonicalJson(base);
    expect(fingerprinter.digest('a', text)).not.toBe(fingerprinter.digest('b', text));
    expect(fingerprinter.intent(base)).toBe(`fp_${fingerprinter.digest('intent', text)}`);
    expect(fingerprinter.secret('x')).toBe(`hmac:${fingerprinter.digest('secret', '"x"')}`);
    expect(fingerprinter.digest('secret', text)).not.toBe(fingerprinter.digest('intent', text));
  });

  it('refuses a record it cannot canonicalize', () => {
    const bad = { ...base, arguments: { n: Number.NaN } as unknown as JsonValue };
    expect(() => fingerprinter.intent(bad)).toThrow(InvalidInputError);
  });

  it('honours its limits', () => {
    const tight = new Fingerprinter(randomBytes(32), { maxDepth: 3, maxBytes: 10_000, maxNodes: 1_000 });
    // record (1) → arguments (2) → a (3) → b (4)
    const error = (() => {
      try {
        tight.intent({ ...base, arguments: { a: { b: {} } } });
      } catch (e) {
        return e as InvalidInputError;
      }
    })();
    expect(error?.reason).toBe('too_deep');
    expect(error?.path).toBe('arguments.a.b');
  });
});

describe('Fingerprinter: known answers (fingerprints are stored: what is hashed must not drift)', () => {
  // A fixed key and fixed records. The canonical text is spelled out, and the digest checked
  // both against a constant and against a plain HMAC over that text: a change to what is
  // hashed — a field added, renamed or dropped, a domain tag — fails here.
  const fixed = new Fingerprinter(Buffer.from(Array.from({ length: 32 }, (_, i) => i)));
  const hmac = (domain: string, text: string) =>
    createHmac('sha256', Buffer.from(Array.from({ length: 32 }, (_, i) => i)))
      .update(`${domain}\0${text}`)
      .digest('base64url');
  const card = 'hmac:fIaJq9Bu36u3xAFMtvd61POdIn3b_B20RcnDnFeGmrE';
  const action = {
    actor: 'user:alice',
    tool: 'charge_card',
    channel: 'mcp',
    target: 'payments',
    credential_ref: null,
    method: 'tools/call',
  };

  it('a secret argument', () => {
    expect(fixed.secret('4242')).toBe(card);
    expect(card).toBe(`hmac:${hmac('secret', '"4242"')}`);
  });

  it('the full canonical action record (also the request digest of a business-key call)', () => {
    const record: CanonicalActionRecord = {
      ...action,
      arguments: { order_id: 'B1', amount: 10, card: { $idem_secret: card } },
      intent_scope: { kind: 'business_key', path: 'order_id', value: 'B1' },
    };
    const text =
      '{"actor":"user:alice","arguments":{"amount":10,"card":{"$idem_secret":"' +
      card +
      '"},"order_id":"B1"},"channel":"mcp","credential_ref":null,"intent_scope":{"kind":"business_key",' +
      '"path":"order_id","value":"B1"},"method":"tools/call","target":"payments","tool":"charge_card"}';
    expect(canonicalJson(record)).toBe(text);
    expect(fixed.intent(record)).toBe('fp_3K_V4DJVkomoiO0JwAo9xZURLrL-89xJ7Wf-Nv_J0pk');
    expect(fixed.intent(record)).toBe(`fp_${hmac('intent', text)}`);
  });

  it('an action named by a business key: per actor, and shared (actor null)', () => {
    const record: BusinessKeyRecord = { ...action, key: { path: 'order_id', value: 'B1' } };
    const text =
      '{"actor":"user:alice","channel":"mcp","credential_ref":null,"key":{"path":"order_id","value":"B1"},' +
      '"method":"tools/call","target":"payments","tool":"charge_card"}';
    expect(canonicalJson(record)).toBe(text);
    expect(fixed.businessKey(record)).toBe('fp_JOS76wnOHkcckg6INZ3HmkIH9g6yUZIVZkDtrYZ7WZ0');
    expect(fixed.businessKey(record)).toBe(`fp_${hmac('business_key', text)}`);

    const shared: BusinessKeyRecord = { ...record, actor: null };
    const sharedText = text.replace('"actor":"user:alice"', '"actor":null');
    expect(canonicalJson(shared)).toBe(sharedText);
    expect(fixed.businessKey(shared)).toBe('fp_JRE1UTWCKsuK4m5ordpqT5-dJYw-eO0NwYmsH-0WHU8');
    expect(fixed.businessKey(shared)).toBe(`fp_${hmac('business_key', sharedText)}`);
  });

  it('a request receipt digest (domain "receipt", over the canonical {method, params} text)', () => {
    // The receipt layer digests the request without its _meta; a changed digest strands every stored receipt.
    const text = canonicalJson({
      method: 'tools/call',
      params: { name: 'charge_card', arguments: { order_id: 'B1', amount: 10 } },
    });
    expect(text).toBe(
      '{"method":"tools/call","params":{"arguments":{"amount":10,"order_id":"B1"},"name":"charge_card"}}',
    );
    expect(fixed.digest('receipt', text)).toBe('3Oiy5Llw2DReZmaywEo6mreGTXgnNk48Xkh9xMIAG_o');
    expect(fixed.digest('receipt', text)).toBe(hmac('receipt', text));
  });

  it('what an upstream server is (domain "server"): a command, a URL, the operator\'s name', () => {
    // Stored executions' fingerprints name their server by this digest: a drift re-identifies every upstream.
    const stdio: ServerRecord = {
      kind: 'stdio',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-memory'],
      cwd: null,
      env: { MEMORY_FILE_PATH: '/srv/a.json' },
    };
    const stdioText =
      '{"args":["-y","@modelcontextprotocol/server-memory"],"command":"npx","cwd":null,' +
      '"env":{"MEMORY_FILE_PATH":"/srv/a.json"},"kind":"stdio"}';
    expect(canonicalJson(stdio)).toBe(stdioText);
    expect(fixed.server(stdio)).toBe('srv_0QaULrRd60SPbV6A9g_0Iceec0mvkQ6LhowlslAOhEE');
    expect(fixed.server(stdio)).toBe(`srv_${hmac('server', stdioText)}`);

    const http: ServerRecord = {
      kind: 'http',
      url: 'https://mcp.example.com/mcp',
      headers: { authorization: 'Bearer t0k3n' },
    };
    const httpText =
      '{"headers":{"authorization":"Bearer t0k3n"},"kind":"http","url":"https://mcp.example.com/mcp"}';
    expect(canonicalJson(http)).toBe(httpText);
    expect(fixed.server(http)).toBe('srv_jk6Ut2ZNmn8yZGhOzNwFvu-_cgh2uFI7oPnu7IMbzfo');
    expect(fixed.server(http)).toBe(`srv_${hmac('server', httpText)}`);

    const named: ServerRecord = { kind: 'named', identity: 'billing-v2' };
    const namedText = '{"identity":"billing-v2","kind":"named"}';
    expect(canonicalJson(named)).toBe(namedText);
    expect(fixed.server(named)).toBe('srv_z0QBFxxRlkUDl67t_jdiJWGJNVRVwRJBdf9D_wJRzdY');
    expect(fixed.server(named)).toBe(`srv_${hmac('server', namedText)}`);
  });

  it('a server digest never equals an intent over the same text', () => {
    const text = canonicalJson({ kind: 'named', identity: 'x' });
    expect(fixed.digest('server', text)).not.toBe(fixed.digest('intent', text));
  });

  it('a business-key fingerprint never equals a full-record one over the same text', () => {
    const text = canonicalJson(base);
    expect(`fp_${fixed.digest('business_key', text)}`).not.toBe(`fp_${fixed.digest('intent', text)}`);
  });
});

describe('Fingerprinter.businessKey: the key names the action', () => {
  const named: BusinessKeyRecord = {
    actor: 'user:alice',
    tool: 'charge_card',
    channel: 'mcp',
    target: 'payments',
    credential_ref: null,
    method: 'tools/call',
    key: { path: 'order_id', value: 'B1' },
  };

  it('changes when any member changes', () => {
    const variants: BusinessKeyRecord[] = [
      { ...named, actor: 'user:bob' },
      { ...named, actor: null },
      { ...named, tool: 'refund' },
      { ...named, channel: 'http' },
      { ...named, target: 'other' },
      { ...named, credential_ref: 'vault:a' },
      { ...named, method: 'POST' },
      { ...named, key: { path: 'order.id', value: 'B1' } },
      { ...named, key: { path: 'order_id', value: 'B2' } },
      { ...named, key: { path: 'order_id', value: 1 } },
    ];
    const all = new Set([named, ...variants].map((r) => fingerprinter.businessKey(r)));
    expect(all.size).toBe(variants.length + 1);
  });

  it('takes equal key values (1 and 1.0, reordered objects) as one action', () => {
    expect(fingerprinter.businessKey({ ...named, key: { path: 'k', value: JSON.parse('1.0') } })).toBe(
      fingerprinter.businessKey({ ...named, key: { path: 'k', value: 1 } }),
    );
    expect(fingerprinter.businessKey({ ...named, key: { path: 'k', value: { a: 1, b: 2 } } })).toBe(
      fingerprinter.businessKey({ ...named, key: { path: 'k', value: { b: 2, a: 1 } } }),
    );
  });
});

describe('Fingerprinter.forDataDir', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-fp-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps one key per data directory', () => {
    const dir = tempDir();
    const first = Fingerprinter.forDataDir(dir).intent(base);
    expect(Fingerprinter.forDataDir(dir).intent(base)).toBe(first);
    expect(statSync(join(dir, FINGERPRINT_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(Fingerprinter.forDataDir(tempDir()).intent(base)).not.toBe(first);
  });
});
