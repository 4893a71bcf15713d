/**
 * A reliability fuzz of the HTTP front: generated messages (fuzz-messages.ts)
 * plus requests the SDK transport refuses (bad Accept, Content-Type, protocol
 * version) each followed by a resend of the same id with good headers. Every
 * request has a deadline; what misses it is counted as hung, a refused or
 * reset connection as crashed. Used by http-fuzz.test.ts (small count) and
 * scripts/reliability-fuzz.ts (full count).
 */
import type { ChildProcess } from 'node:child_process';
import fc from 'fast-check';
import { isAlive } from '../support/http-gateway.js';
import { MCP_HEADERS, messagesOf, rawRequest, rawSession } from '../support/raw-http.js';
import { classify, type FuzzSample, fuzzSample } from './fuzz-messages.js';

/** Headers the SDK transport refuses a POST for, before the server sees it. */
const REFUSALS: Record<string, Record<string, string>> = {
  accept: { accept: 'application/json' },
  'content-type': { 'content-type': 'text/plain' },
  'protocol-version': { 'mcp-protocol-version': '1999-01-01' },
};

type Step =
  | { kind: 'sample'; sample: FuzzSample }
  /** A call refused for `refusal`, then the same message with good headers: that one must be answered. */
  | { kind: 'refused-then-resent'; refusal: keyof typeof REFUSALS; id: string | number; key: string };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 9, arbitrary: fuzzSample.map((sample) => ({ kind: 'sample' as const, sample })) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('refused-then-resent' as const),
      refusal: fc.constantFrom(...(Object.keys(REFUSALS) as (keyof typeof REFUSALS)[])),
      id: fc.oneof(fc.integer({ min: 0, max: 1_000_000 }), fc.string({ minLength: 1, maxLength: 12 })),
      key: fc.integer({ min: 0, max: 2 ** 30 }).map((n) => `rr-${n}`),
    }),
  },
);

export interface FuzzTally {
  /** HTTP requests sent (a refused-then-resent step sends two). */
  tried: number;
  /** Complete answers within the deadline. */
  answered: number;
  /** No complete answer within the deadline. */
  hung: number;
  /** Connection refused or reset, or the gateway process gone. */
  crashed: number;
  /** 5xx answers. */
  serverErrors: number;
  /** Refused-then-resent steps, and how many resends got a reply for their id. */
  resends: number;
  resendsAnswered: number;
  /** The first few problems, for the report. */
  problems: string[];
  elapsedMs: number;
}

export async function fuzzHttpFront(options: {
  url: string;
  count: number;
  seed: number;
  /** Per-request deadline (ms). */
  timeoutMs: number;
  /** The gateway's process, when it runs in one: gone = crashed. */
  child?: ChildProcess;
}): Promise<FuzzTally> {
  const started = Date.now();
  const tally: FuzzTally = {
    tried: 0,
    answered: 0,
    hung: 0,
    crashed: 0,
    serverErrors: 0,
    resends: 0,
    resendsAnswered: 0,
    problems: [],
    elapsedMs: 0,
  };
  const session = await rawSession(options.url, 'reliability-fuzz');
  const note = (problem: string) => {
    if (tally.problems.length < 20) tally.problems.push(problem);
  };
  const send = async (headers: Record<string, string>, body: string) => {
    tally.tried++;
    try {
      const response = await rawRequest(options.url, { headers, body, timeoutMs: options.timeoutMs });
      tally.answered++;
      if (response.status >= 500) {
        tally.serverErrors++;
        note(`${response.status} for ${body.slice(0, 120)}`);
      }
      return response;
    } catch (error) {
      const message = String(error);
      if (/no complete answer within/.test(message)) {
        tally.hung++;
        note(`hung: ${body.slice(0, 120)}`);
      } else {
        tally.crashed++;
        note(`${message} for ${body.slice(0, 120)}`);
      }
      return undefined;
    }
  };

  for (const next of fc.sample(step, { seed: options.seed, numRuns: options.count })) {
    if (options.child && !isAlive(options.child)) {
      tally.crashed++;
      note('the gateway process is gone');
      break;
    }
    if (next.kind === 'refused-then-resent') {
      tally.resends++;
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: next.id,
        method: 'tools/call',
        params: { name: 'count', arguments: { key: next.key } },
      });
      await send({ ...session.headers, ...REFUSALS[next.refusal] }, body);
      const resent = await send(session.headers, body);
      if (resent && messagesOf(resent).some((m) => m.id === next.id)) tally.resendsAnswered++;
      else if (resent) note(`resend after ${next.refusal} got ${resent.status} ${resent.text.slice(0, 120)}`);
      continue;
    }
    const { sample } = next;
    const c = classify(sample.body);
    // A batch that cancels its own request gets no answer for it (MCP), by design: not a hang.
    if (c.cancels.some((id) => c.requestIds.includes(id))) continue;
    // A sessionless initialize opens a real session (and an upstream process): keep those in the session.
    const mode = c.methods.includes('initialize') ? 'valid' : sample.session;
    const headers =
      mode === 'valid'
        ? session.headers
        : mode === 'bogus'
          ? { ...session.headers, 'mcp-session-id': 'bogus' }
          : MCP_HEADERS;
    await send(headers, sample.body);
  }
  if (options.child && !isAlive(options.child)) tally.crashed++;
  tally.elapsedMs = Date.now() - started;
  return tally;
}
