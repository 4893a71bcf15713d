/**
 * Issue 26 item 4: the demo's lost-response scenarios, run against candidate
 * defaults for tools that carry neither annotations nor a contract. Shared by
 * scripts/staleness-horizon.ts (the whole table) and
 * test/staleness-horizon.test.ts (the cells that pin the finding).
 *
 * Each cell is a fresh world: the library (`Idem`, the engine the gateway uses)
 * on SQLite, served over Streamable HTTP on loopback, an example server whose
 * `charge_card` and `get_time` say nothing about their effects (as most
 * published servers), a payment processor that ignores Idempotency-Key (such a
 * server sends none) and counts every charge, and the demo's agent (the
 * official SDK client). The store, the receipts and `get_time` read one
 * injected clock; the agent's delay is a step of that clock, never a sleep.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ToolContract } from '../../src/contracts/contract.js';
import { nameSaysReadOnly } from '../../src/contracts/guess.js';
import { connect, summarize } from '../../src/demo/agent.js';
import { PaymentProcessor } from '../../src/demo/processor.js';
import { serveStreamableHttp } from '../../src/library/http.js';
import { Idem } from '../../src/library/idem.js';
import { SqliteStore } from '../../src/store/index.js';
import { waitUntil } from './wait.js';

/** A default for tools with neither annotations nor a contract, as a contract the engine already supports. */
export interface Candidate {
  id: string;
  label: string;
  /** The contract a tool of this name gets (undefined: the built-in default). */
  contractFor(tool: string): ToolContract | undefined;
}

const horizon = (window: string): Candidate => ({
  id: `horizon-${window}`,
  label: `b. replay for ${window} (attach_window: ${window})`,
  contractFor: () => ({ replay: 'review', attach_window: window }),
});

export const CANDIDATES: readonly Candidate[] = [
  { id: 'default', label: 'a. today: review, 15 min window', contractFor: () => undefined },
  horizon('2m'),
  horizon('30s'),
  horizon('5s'),
  {
    id: 'horizon-0',
    label: 'b. replay until delivered (after_completion: new)',
    contractFor: () => ({ replay: 'review', after_completion: 'new' }),
  },
  { id: 'read-only', label: 'c. no replay (read_only)', contractFor: () => ({ replay: 'read_only' }) },
  {
    id: 'name-rule',
    label: "d. today, but a read verb first in the name → read_only (idem init's rule)",
    contractFor: (tool) => (nameSaysReadOnly(tool) ? { replay: 'read_only' } : undefined),
  },
];

/**
 * One agent behaviour (the demo's scenarios 1, 1b, 2 and 3, with the retry
 * after `delayMs`), or two intended reads `delayMs` apart.
 * - `resend`: the answer is lost; the fetch layer re-sends the same request (same JSON-RPC id, same session).
 * - `new_call`: the answer is lost (connection reset after the server wrote it); the agent calls again,
 *   new request id, new session.
 * - `timeout`: the agent's request times out while the charge is held at the processor (the SDK cancels
 *   it, as at DEFAULT_REQUEST_TIMEOUT_MSEC); the charge then completes; the agent calls again.
 * - `concurrent`: two identical calls at once, from two connections.
 * - `read`: get_time, and another intended get_time `delayMs` later (not a retry: the agent wants the time).
 */
export type ScenarioKind = 'resend' | 'new_call' | 'timeout' | 'concurrent' | 'read';

export interface Scenario {
  kind: ScenarioKind;
  delayMs: number;
  /** Where the delay comes from (printed beside the figures). */
  why: string;
}

export interface CellResult {
  /** Charges counted at the processor (1 is right; 2 is a duplicate). Reads: 0. */
  charges: number;
  /** Reads: the second intended call got the first one's timestamp. */
  stale: boolean;
  /**
   * Lost-answer scenarios: the store recorded the first result as delivered
   * although the agent never received it (undefined where nothing is recorded: read_only).
   */
  recordedDelivered: boolean | undefined;
  agentSaw: string[];
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/**
 * The delays, from what clients do (versions as installed here):
 * - node-retry 0.12 (under p-retry, async-retry): minTimeout 1 s, factor 2 → 1, 2, 4, 8… s; its 8th
 *   retry comes 255 s after the first attempt. undici 7 RetryHandler: 0.5 s ×2 up to 30 s, 5 retries
 *   (8 s before the last), POST only when asked to. The SDK's Streamable HTTP reconnection: 1 s ×1.5.
 * - MCP TypeScript SDK 1.32: DEFAULT_REQUEST_TIMEOUT_MSEC = 60 000 (shared/protocol.js): a lost answer
 *   looks like a hang for 60 s, then the call fails and the agent calls again.
 * - An agent restarted: Kubernetes restarts a crashed container after 10 s, doubling, capped at 5 min
 *   (kubernetes.io, Pod lifecycle, "Container restarts"); a person re-running it: minutes.
 * - 20 min: past the 15-minute window, where every candidate runs the call again.
 */
export const SCENARIOS: readonly Scenario[] = [
  { kind: 'resend', delayMs: 1 * SECOND, why: 'fetch retry wrapper, first retry (node-retry 1 s)' },
  { kind: 'resend', delayMs: 8 * SECOND, why: 'fetch retry wrapper, a later retry (undici 5th: 8 s)' },
  { kind: 'resend', delayMs: 255 * SECOND, why: "node-retry's 8th retry (255 s): past the receipts' 2 min" },
  { kind: 'new_call', delayMs: 1 * SECOND, why: 'agent retries after a transport error (SDK reconnect 1 s)' },
  { kind: 'new_call', delayMs: 60 * SECOND, why: 'SDK request timeout (DEFAULT_REQUEST_TIMEOUT_MSEC)' },
  { kind: 'new_call', delayMs: 5 * MINUTE, why: 'agent restarted (Kubernetes back-off cap 5 min)' },
  { kind: 'new_call', delayMs: 20 * MINUTE, why: 'past the 15-minute window' },
  { kind: 'timeout', delayMs: 1 * SECOND, why: 'agent gave up, retries at once' },
  { kind: 'timeout', delayMs: 60 * SECOND, why: 'agent gave up, retries after one SDK timeout' },
  { kind: 'timeout', delayMs: 5 * MINUTE, why: 'agent restarted (Kubernetes back-off cap 5 min)' },
  { kind: 'concurrent', delayMs: 0, why: 'two connections at once' },
  { kind: 'read', delayMs: 1 * SECOND, why: 'an agent loop asking the time again' },
  { kind: 'read', delayMs: 10 * SECOND, why: 'a step of a task later' },
  { kind: 'read', delayMs: 60 * SECOND, why: 'a minute later' },
  { kind: 'read', delayMs: 5 * MINUTE, why: 'five minutes later' },
  { kind: 'read', delayMs: 20 * MINUTE, why: 'past the 15-minute window' },
];

/** A delay as the table prints it: 1s, 4m15s, 20m. */
export function formatDelay(ms: number): string {
  if (ms < MINUTE) return `${ms / SECOND}s`;
  const rest = (ms % MINUTE) / SECOND;
  return `${Math.floor(ms / MINUTE)}m${rest ? `${rest}s` : ''}`;
}

const CARD = '4242424242424242';

/** The injected clock: every time the store, the receipts and get_time read; moved only by `advance`. */
export class TestClock {
  #now = Date.parse('2026-12-01T09:00:00.000Z');
  readonly now = (): number => this.#now;
  advance(ms: number): void {
    this.#now += ms;
  }
}

export interface World {
  url: string;
  clock: TestClock;
  processor: PaymentProcessor;
  store: SqliteStore;
  /** Charges whose handler heard the agent's cancellation. */
  cancelled: { count: number };
  close(): Promise<void>;
}

/** What a caller may add to the example server: more tools, with the world's processor and clock. */
export type ExtraTools = (
  server: McpServer,
  idem: Idem,
  deps: { processorUrl: string; clock: TestClock; candidate: Candidate },
) => void;

/**
 * A fresh world (exported for test/support/replay-honesty/, which adds tools of its own through
 * `extraTools`): close it when done.
 */
export async function openWorld(candidate: Candidate, extraTools?: ExtraTools): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'idem-staleness-'));
  const clock = new TestClock();
  // A server that knows nothing of Idem sends no Idempotency-Key: this processor charges every POST.
  const processor = new PaymentProcessor({ honoursKeys: false });
  const processorUrl = await processor.start();
  const store = await SqliteStore.open({ path: join(dir, 'idem.db'), clock: clock.now });
  const idem = await Idem.open({
    dataDir: dir,
    store,
    receipts: { clock: clock.now },
    maintenanceIntervalMs: 0,
  });
  const cancelled = { count: 0 };
  const http = await serveStreamableHttp(idem, () => {
    const server = unannotatedServer(idem, candidate, { processorUrl, clock, cancelled });
    extraTools?.(server, idem, { processorUrl, clock, candidate });
    return server;
  });
  return {
    url: http.url,
    clock,
    processor,
    store,
    cancelled,
    close: async () => {
      await http.close();
      await idem.close();
      await store.close();
      await processor.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The example server as a published one would be: no annotations; the candidate supplies the contract. */
function unannotatedServer(
  idem: Idem,
  candidate: Candidate,
  {
    processorUrl,
    clock,
    cancelled,
  }: { processorUrl: string; clock: TestClock; cancelled: { count: number } },
) {
  const server = new McpServer({ name: 'unannotated-example', version: '1.0.0' });
  const chargeContract = candidate.contractFor('charge_card');
  idem.tool(
    server,
    'charge_card',
    {
      description: 'Charge a card for an order.',
      inputSchema: {
        order_id: z.string(),
        amount_cents: z.number().int().positive(),
        card_number: z.string().meta({ writeOnly: true }),
      },
      ...(chargeContract ? { contract: chargeContract } : {}),
    },
    async ({ order_id, amount_cents }, extra) => {
      extra.signal.addEventListener('abort', () => cancelled.count++, { once: true });
      const res = await fetch(`${processorUrl}/charges`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ order_id, amount_cents, currency: 'EUR' }),
      });
      const charge = (await res.json()) as { charge_id: string };
      return { content: [{ type: 'text', text: `Charged order ${order_id} (${charge.charge_id}).` }] };
    },
  );
  const timeContract = candidate.contractFor('get_time');
  idem.tool(
    server,
    'get_time',
    {
      description: 'The current time.',
      inputSchema: {},
      ...(timeContract ? { contract: timeContract } : {}),
    },
    async () => ({ content: [{ type: 'text', text: new Date(clock.now()).toISOString() }] }),
  );
  return server;
}

/** Runs one scenario under one candidate, in a world of its own. */
export async function runCell(candidate: Candidate, scenario: Scenario): Promise<CellResult> {
  const world = await openWorld(candidate);
  try {
    return await runScenario(world, scenario);
  } finally {
    await world.close();
  }
}

const chargeArgs = { order_id: 'order-1', amount_cents: 1999, card_number: CARD };

async function runScenario(world: World, scenario: Scenario): Promise<CellResult> {
  const saw: string[] = [];
  const note = (r: CallToolResult | string) => saw.push(typeof r === 'string' ? r : summarize(r));
  const { clock, processor, url } = world;
  const done = async (): Promise<CellResult> => {
    await settled(world);
    return { charges: processor.charges, stale: false, recordedDelivered: undefined, agentSaw: saw };
  };
  switch (scenario.kind) {
    case 'resend': {
      // The demo's scenario 1, the resend `delayMs` after the answer was lost.
      const lossy = lossyFetch('resend', () => clock.advance(scenario.delayMs));
      const agent = await connect(url, lossy.fetch);
      lossy.armed = true;
      note(await callCharge(agent));
      await agent.close();
      return { ...(await done()), recordedDelivered: await firstDelivered(world) };
    }
    case 'new_call': {
      // The demo's scenario 1b, the new call `delayMs` after the answer was lost.
      const lossy = lossyFetch('throw');
      const agent = await connect(url, lossy.fetch);
      lossy.armed = true;
      note(
        await callCharge(agent).catch((error: unknown) => `transport error: ${String(error).split('\n')[0]}`),
      );
      await agent.close();
      await settled(world);
      const recordedDelivered = await firstDelivered(world);
      clock.advance(scenario.delayMs);
      const restarted = await connect(url);
      note(await callCharge(restarted));
      await restarted.close();
      return { ...(await done()), recordedDelivered };
    }
    case 'timeout': {
      // The demo's scenario 3, with the agent's own timeout: it gives up while the processor holds
      // the charge, so its request is cancelled after dispatch; the charge completes later.
      const release = processor.holdCharges();
      const agent = await connect(url);
      const abort = new AbortController();
      const first = callCharge(agent, abort.signal).catch((error: unknown) => `gave up: ${String(error)}`);
      await waitUntil('the charge to reach the processor', () => processor.requests === 1);
      abort.abort('request timed out');
      note(await first);
      // The charge completes once the server has heard the cancellation: the answer then has no caller.
      await waitUntil('the server to hear the cancellation', () => world.cancelled.count === 1);
      release();
      await processor.chargesReach(1);
      await settled(world);
      clock.advance(scenario.delayMs);
      const recordedDelivered = await firstDelivered(world);
      note(await callCharge(agent));
      await agent.close();
      return { ...(await done()), recordedDelivered };
    }
    case 'concurrent': {
      // The demo's scenario 2: held until one of the two was answered, or both reached the processor.
      const release = processor.holdCharges();
      const [a, b] = await Promise.all([connect(url), connect(url)]);
      const calls = [callCharge(a), callCharge(b)];
      let answered = false;
      for (const call of calls) void call.finally(() => (answered = true));
      await waitUntil('one answer or two charges', () => answered || processor.requests === 2);
      release();
      for (const r of await Promise.all(calls)) note(r);
      await Promise.all([a.close(), b.close()]);
      return done();
    }
    case 'read': {
      const agent = await connect(url);
      const first = await callTime(agent);
      clock.advance(scenario.delayMs);
      const second = await callTime(agent);
      note(first);
      note(second);
      await agent.close();
      // The tool's own text, wherever Idem's replay note stands (before it or after it).
      const text = (r: CallToolResult) =>
        r.content
          .map((c) => (c as { text?: string }).text ?? '')
          .filter((t) => !t.startsWith('[idem]'))
          .join('\n');
      return { charges: 0, stale: text(first) === text(second), recordedDelivered: undefined, agentSaw: saw };
    }
  }
}

async function callCharge(agent: Awaited<ReturnType<typeof connect>>, signal?: AbortSignal) {
  return (await agent.callTool(
    { name: 'charge_card', arguments: chargeArgs },
    CallToolResultSchema,
    signal ? { signal } : {},
  )) as CallToolResult;
}

async function callTime(agent: Awaited<ReturnType<typeof connect>>) {
  return (await agent.callTool({ name: 'get_time', arguments: {} })) as CallToolResult;
}

/** Every charge recorded: no execution still dispatched or unknown (the outcome write follows the answer). */
async function settled(world: World): Promise<void> {
  await waitUntil('every execution to have its outcome', async () =>
    (await world.store.list({ tool: 'charge_card' })).every((r) => r.state === 'completed'),
  );
}

/** Whether the first charge's result is recorded as delivered (undefined: no record, read_only). */
async function firstDelivered(world: World): Promise<boolean | undefined> {
  const records = await world.store.list({ tool: 'charge_card' });
  const first = records.sort((x, y) => x.createdAt - y.createdAt)[0];
  return first ? first.deliveredAt !== null : undefined;
}

/**
 * The demo's lossy fetch: the next tools/call runs and its whole answer is
 * written and read off the wire, then dropped. `resend`: the very same request
 * is sent again (after `beforeResend`); `throw`: it fails like a reset connection.
 */
function lossyFetch(mode: 'resend' | 'throw', beforeResend: () => void = () => {}) {
  const state = {
    armed: false,
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      const isToolCall = typeof init?.body === 'string' && init.body.includes('"tools/call"');
      const response = await fetch(input, init);
      if (!isToolCall || !state.armed) return response;
      state.armed = false;
      await response.text();
      if (mode === 'throw') throw new TypeError('fetch failed: connection reset');
      beforeResend();
      return fetch(input, init);
    }) as typeof globalThis.fetch,
  };
  return state;
}
