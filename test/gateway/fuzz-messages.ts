/**
 * Generated JSON-RPC traffic for the gateway fuzz run (fast-check, fixed
 * seed): valid requests, notifications and responses, mutations of them
 * (fields dropped or replaced, ids of the wrong type, wrong versions),
 * batches, arbitrary JSON, truncated JSON, garbage text and deep nesting.
 *
 * Each sample carries the reference classification the gateway must agree
 * with, computed with the SDK's own schemas (not the gateway's code).
 */
import {
  JSONRPCMessageSchema,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface FuzzSample {
  /** What goes on the wire (one line on stdio: no raw newlines). */
  body: string;
  /** Which session header an HTTP request gets. */
  session: 'valid' | 'none' | 'bogus';
}

const key = fc.integer({ min: 0, max: 2 ** 30 }).map((n) => `fz-${n}`);
const goodId = fc.oneof(fc.integer({ min: 0, max: 1_000_000 }), fc.string({ maxLength: 12 }));
const badId = fc.oneof(
  fc.double({ noInteger: true }),
  fc.constant(null),
  fc.boolean(),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
  fc.array(fc.integer(), { maxLength: 2 }),
);
const anyJson = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>;
const countArguments = fc.record(
  { key, payload: fc.string({ maxLength: 40 }), extra: anyJson },
  { requiredKeys: ['key'] },
);

/** The method and params of a request the gateway may see from a client. */
const call = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      method: fc.constant('tools/call'),
      params: fc.record({ name: fc.constant('count'), arguments: countArguments }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      method: fc.constant('tools/call'),
      params: fc.record(
        {
          name: fc.oneof(
            fc.constantFrom('read_count', 'nope', 'idem_execution_status', '', 'count'),
            fc.string({ maxLength: 10 }),
          ),
          arguments: fc.oneof(countArguments, anyJson, fc.record({ ref: fc.string({ maxLength: 40 }) })),
        },
        { requiredKeys: ['name'] },
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        method: fc.oneof(
          fc.constantFrom(
            'ping',
            'tools/list',
            'resources/list',
            'resources/read',
            'prompts/list',
            'prompts/get',
            'logging/setLevel',
            'completion/complete',
            'initialize',
            'notifications/initialized',
            'notifications/cancelled',
            'notifications/progress',
            'notifications/roots/list_changed',
          ),
          fc.string({ maxLength: 16 }),
        ),
        params: fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 }),
      },
      { requiredKeys: ['method'] },
    ),
  },
);

const request = fc
  .tuple(call, goodId)
  .map(([c, id]) => ({ jsonrpc: '2.0', id, ...c }) as Record<string, Json>);
const notification = call.map((c) => ({ jsonrpc: '2.0', ...c }) as Record<string, Json>);
const response = fc.oneof(
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id: goodId,
    result: fc.dictionary(fc.string({ maxLength: 6 }), anyJson, { maxKeys: 2 }),
  }),
  fc.record({
    jsonrpc: fc.constant('2.0'),
    id: goodId,
    error: fc.record({ code: fc.integer(), message: fc.string({ maxLength: 20 }) }),
  }),
);
const cancel = goodId.map((requestId) => ({
  jsonrpc: '2.0',
  method: 'notifications/cancelled',
  params: { requestId, reason: 'fuzz' },
}));
const valid = fc.oneof(
  { weight: 6, arbitrary: request },
  { weight: 2, arbitrary: notification },
  { weight: 1, arbitrary: response as fc.Arbitrary<Record<string, Json>> },
  { weight: 1, arbitrary: cancel as fc.Arbitrary<Record<string, Json>> },
);

const FIELDS = ['jsonrpc', 'id', 'method', 'params'] as const;
const mutated = fc.oneof(
  fc.tuple(valid, fc.constantFrom(...FIELDS)).map(([m, field]) => {
    const copy = { ...m };
    delete copy[field];
    return copy;
  }),
  fc.tuple(valid, fc.constantFrom(...FIELDS), anyJson).map(([m, field, value]) => ({ ...m, [field]: value })),
  fc.tuple(request, badId).map(([m, id]) => ({ ...m, id }) as Record<string, Json>),
  fc.tuple(valid, fc.constantFrom('1.0', '2', 2, null, '')).map(([m, v]) => ({ ...m, jsonrpc: v })),
  fc.tuple(request, anyJson).map(([m, params]) => ({ ...m, params })),
  fc.tuple(request, fc.string({ maxLength: 6 }), anyJson).map(([m, k, v]) => ({ ...m, [k]: v })),
);

/** Arguments nested `depth` levels deep (arrays or objects), inside an otherwise valid call. */
const deep = fc
  .tuple(
    fc.integer({ min: 50, max: 6_000 }),
    fc.boolean(),
    goodId,
    key,
    fc.constantFrom('count', 'read_count'),
  )
  .map(([depth, arrays, id, k, tool]) => {
    const nested = arrays
      ? `${'['.repeat(depth)}${']'.repeat(depth)}`
      : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":"${tool}","arguments":{"key":"${k}","extra":${nested}}}}`;
  });

const oneLine = (text: string) => text.replace(/[\r\n]/g, ' ');

/** One message body: mostly JSON-RPC-shaped, some of it broken in every way JSON allows and some not JSON at all. */
export const fuzzBody: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: valid.map((m) => JSON.stringify(m)) },
  { weight: 8, arbitrary: mutated.map((m) => JSON.stringify(m)) },
  {
    weight: 2,
    arbitrary: fc.array(fc.oneof(valid, mutated), { maxLength: 4 }).map((b) => JSON.stringify(b)),
  },
  { weight: 2, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(valid, fc.nat())
      .map(([m, cut]) => {
        const text = JSON.stringify(m);
        return text.slice(0, cut % Math.max(1, text.length - 1));
      })
      .filter((text) => text.length > 0),
  },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 80 }).map(oneLine) },
  { weight: 1, arbitrary: deep },
);

export const fuzzSample: fc.Arbitrary<FuzzSample> = fc.record({
  body: fuzzBody,
  session: fc.oneof(
    { weight: 8, arbitrary: fc.constant('valid' as const) },
    { weight: 1, arbitrary: fc.constant('none' as const) },
    { weight: 1, arbitrary: fc.constant('bogus' as const) },
  ),
});

/** What a body is, by the SDK's own schemas. */
export interface Classified {
  /** Parses as JSON. */
  json: boolean;
  /** A JSON-RPC message or a non-empty batch of them. */
  valid: boolean;
  /** Ids of the requests in it (a valid body only). */
  requestIds: (string | number)[];
  /** Methods of the requests in it. */
  methods: string[];
  /** Keys of the valid `count` calls in it: the only ones allowed to run. */
  countKeys: string[];
  /** A valid single message (not a batch). */
  single: boolean;
  /** Request ids named by the valid `notifications/cancelled` in it: cancelled requests get no response. */
  cancels: (string | number)[];
}

export function classify(body: string): Classified {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return {
      json: false,
      valid: false,
      requestIds: [],
      methods: [],
      countKeys: [],
      single: false,
      cancels: [],
    };
  }
  const messages: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  const valid = messages.length > 0 && messages.every((m) => JSONRPCMessageSchema.safeParse(m).success);
  const requests = valid
    ? messages.flatMap((m) => {
        const r = JSONRPCRequestSchema.safeParse(m);
        return r.success ? [r.data] : [];
      })
    : [];
  const countKeys = requests.flatMap((r) => {
    const params = r.params as { name?: unknown; arguments?: { key?: unknown } } | undefined;
    return r.method === 'tools/call' && params?.name === 'count' && typeof params.arguments?.key === 'string'
      ? [params.arguments.key]
      : [];
  });
  const cancels = valid
    ? messages.flatMap((m) => {
        const n = JSONRPCNotificationSchema.safeParse(m);
        const id = (n.data?.params as { requestId?: unknown } | undefined)?.requestId;
        return n.success &&
          n.data.method === 'notifications/cancelled' &&
          (typeof id === 'string' || typeof id === 'number')
          ? [id]
          : [];
      })
    : [];
  return {
    json: true,
    valid,
    cancels,
    requestIds: requests.map((r) => r.id),
    methods: requests.map((r) => r.method),
    countKeys,
    single: valid && !Array.isArray(parsed),
  };
}
