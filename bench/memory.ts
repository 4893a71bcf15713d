/**
 * Memory (issue 14): the gateway's resident set idle and per open session,
 * what 10,000 receipts hold, what a receipt costs at the book's bound, and a
 * soak: many calls through one gateway, its RSS sampled as they go.
 *
 *   npx tsx bench/memory.ts     # BENCH_SOAK_CALLS (default 100,000) calls in the soak
 *
 * The soak's gateway keeps receipts 10 s (the default is 2 minutes), so that
 * the receipt book reaches its steady size within the soak's first half
 * (warm-up): what still grows in the second half is a leak, not retention.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ReceiptBook } from '../src/receipts/receipt-book.js';
import { BENCH_RECEIPTS_MAX } from './gateway.js';
import {
  builtCli,
  connectClient,
  drive,
  perSec,
  REPO_ROOT,
  startServerProcess,
  trivialUpstream,
} from './harness.js';
import { InspectorClient, inspectorUrlIn, type LiveMemory } from './inspector-protocol.js';

const MiB = 1024 * 1024;
/** Rounds of `sessions` sessions opened, each with a call, and ended (see benchGatewayMemory). */
const SESSION_ROUNDS = 3;
const mib = (bytes: number) => (bytes / MiB).toFixed(1);

/** Resident set of one process (VmRSS), bytes. */
function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) * 1024;
}

/** The processes `pid` started that are still running (its threads' children). */
function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
}

/** Waits until `condition` holds (checked every 20 ms), for at most 30 s. */
async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 30_000;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A full garbage collection in this process (V8's `gc`, enabled here rather than by a flag). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/**
 * Adds `count` settled receipts as the front keeps them (the JSON-RPC reply of
 * a small tool result), calling `tick(i)` before each (to move a test clock).
 */
function fillBook(book: ReceiptBook, count: number, from = 0, tick?: (i: number) => void): void {
  for (let i = from; i < from + count; i++) {
    tick?.(i);
    const decision = book.begin(`ses-1\u0000${i}`, `fp_${i.toString(36).padStart(43, 'x')}`, true, {
      owner: `actor-${i % 10}`,
      group: 'ses-1',
    });
    if (decision.kind !== 'new') throw new Error(`receipt ${i}: ${decision.kind}`);
    decision.settle({
      jsonrpc: '2.0',
      id: i,
      result: { content: [{ type: 'text', text: `id-${i}` }], _meta: { 'io.idem/execution-id': `exe_${i}` } },
    });
  }
}

/** Heap held by 10,000 settled receipts (in this process, after a full GC on both sides). */
export function receiptHeapPer10k(): string[] {
  const book = new ReceiptBook({ maxReceipts: 1_000_000, maxReceiptsPerActor: 1_000_000 });
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  fillBook(book, 50_000);
  collectGarbage();
  const perTenK = ((process.memoryUsage().heapUsed - before) / 50_000) * 10_000;
  if (book.size !== 50_000) throw new Error('the book lost receipts');
  return [`| heap per 10,000 settled receipts (ReceiptBook, small tool replies) | ${mib(perTenK)} MiB |`];
}

/**
 * What a new id costs at the book's bound, with 1,000 and 100,000 receipts
 * held: each new id evicts the one receipt settled first (past retention), or
 * is refused when none is past it. O(1): the two sizes should cost the same.
 */
export function receiptCostAtBound(ops: number): string[] {
  // Warm-up: the same work at a small size, so that neither size below runs cold.
  measureReceiptsAtBound(1_000, ops);
  const small = measureReceiptsAtBound(1_000, ops);
  const large = measureReceiptsAtBound(100_000, ops);
  const row = (size: number, cost: { evict: number; refuse: number }) =>
    `| new id at the bound, ${size.toLocaleString('en')} receipts held | ${cost.evict.toFixed(0)} ns (evicts the oldest) | ${cost.refuse.toFixed(0)} ns (refused: none past retention) |`;
  return [
    '| series | per new id, one receipt past retention | per new id, none past retention |',
    '| --- | ---: | ---: |',
    row(1_000, small),
    row(100_000, large),
    `| 100,000 ÷ 1,000 receipts | ${(large.evict / small.evict).toFixed(2)}× | ${(large.refuse / small.refuse).toFixed(2)}× |`,
  ];
}

/**
 * ns per new id on a full book of `size` receipts: refused (none past
 * retention), then evicting one each. The median of 20 timed batches, so that
 * a GC pause or the scheduler (this machine is shared) does not decide it.
 */
function measureReceiptsAtBound(size: number, ops: number): { evict: number; refuse: number } {
  // Receipt i settles at time i and is kept `size` ms: at time size + j, exactly receipt j is past it.
  let now = 0;
  const book = new ReceiptBook({
    maxReceipts: size,
    maxReceiptsPerActor: size,
    retentionMs: size,
    clock: () => now,
  });
  const tick = (i: number) => {
    now = i;
  };
  fillBook(book, size, 0, tick);
  collectGarbage();
  const batch = Math.max(1, Math.floor(Math.min(ops, size) / 20));
  const refuse = medianPerOp(batch, (i) => {
    if (book.begin(`other\u0000${i}`, 'fp_x', true).kind !== 'full') throw new Error('expected full');
  });
  let next = size;
  const evict = medianPerOp(batch, () => {
    fillBook(book, 1, next++, tick);
  });
  if (book.size !== size) throw new Error(`the book holds ${book.size}, not ${size}`);
  return { evict, refuse };
}

/** Median over 20 batches of `batch` calls of `op`, in ns per call. */
function medianPerOp(batch: number, op: (i: number) => void): number {
  const perOp: number[] = [];
  let i = 0;
  for (let round = 0; round < 20; round++) {
    const started = process.hrtime.bigint();
    for (let k = 0; k < batch; k++) op(i++);
    perOp.push(Number(process.hrtime.bigint() - started) / batch);
  }
  return perOp.sort((a, b) => a - b)[10] as number;
}

/**
 * RSS per session, from the growth over `sessions` sessions. RSS also moves with what V8 and the
 * allocator give back to the system, by more than a session costs: a growth below zero is not a
 * session freeing memory, it is that noise, and is said so rather than printed as a negative cost.
 */
function rssPerSession(growth: number, sessions: number): string {
  if (growth <= 0)
    return `within RSS's noise (${mib(growth)} MiB over ${sessions} sessions; the live memory line below is the per-session cost)`;
  return `${mib(growth / sessions)} MiB`;
}

/** The gateway's RSS idle, per open session, and through a soak of `soakCalls` calls (16 in flight). */
export async function benchGatewayMemory(soakCalls: number, sessions = 20): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'idem-bench-memory-'));
  const configPath = join(dir, 'idem.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      data_dir: dir,
      upstreams: { trivial: { ...trivialUpstream(), cwd: REPO_ROOT } },
      tools: { echo: { replay: 'keyed', scope: { business_key: 'id' } } },
      // Bounds lifted as in the gateway bench: at ~1,000 calls/s one actor holds more than the
      // default 10,000 receipts within 10 s, and the gateway rightly refuses (IDEM_RECEIPTS_FULL).
      receipts: { retention: '10s', max: BENCH_RECEIPTS_MAX, max_per_actor: BENCH_RECEIPTS_MAX },
      sweep_interval: '5s',
    }),
  );
  // --inspect (loopback, a free port): the heap is read through the inspector protocol after
  // a full garbage collection (inspector-protocol.ts); nothing in the gateway's code changes.
  let inspectorUrl: string | undefined;
  const server = await startServerProcess({
    name: 'idem-memory',
    command: process.execPath,
    args: ['--inspect=127.0.0.1:0', builtCli(), 'gateway', '--config', configPath, '--listen', '127.0.0.1:0'],
    ready: (out) => {
      inspectorUrl ??= inspectorUrlIn(out);
      return inspectorUrl && /Streamable HTTP on (http:\S+)/.exec(out)?.[1];
    },
  });
  const clients: Client[] = [];
  const lines: string[] = [];
  const inspector = await InspectorClient.connect(inspectorUrl as string);
  try {
    await inspector.liveMemory(); // a full collection first: the start's garbage is not the idle cost
    const idle = rssOf(server.pid);
    // Per session: from one working session (the gateway warmed up) to `sessions` more, each
    // with a call done; then they end, as a client ends one (DELETE), and the gateway stops each
    // one's upstream. Three rounds: the first warms up what is made once (compiled code, caches),
    // so what is left per ended session is read between the ends of the first and the last.
    const call = (client: Client, id: string) => client.callTool({ name: 'echo', arguments: { id } });
    clients.push(await connectClient(server.url, 'memory-0'));
    await call(clients[0] as Client, 's-0');
    // Each RSS read right after a full collection (liveMemory makes one): read before it, the
    // garbage of the warm-up could be counted against one reading and not the other.
    const oneLive = await inspector.liveMemory();
    const oneSession = rssOf(server.pid);
    let withSessions = 0;
    let openLive: LiveMemory | undefined;
    const endedLive: LiveMemory[] = [];
    for (let round = 0; round < SESSION_ROUNDS; round++) {
      for (let i = 1; i <= sessions; i++) clients.push(await connectClient(server.url, `memory-${i}`));
      await Promise.all(clients.map((client, i) => call(client, `s-${round}-${i}`)));
      if (round === 0) {
        openLive = await inspector.liveMemory();
        withSessions = rssOf(server.pid);
      }
      for (const client of clients.splice(1)) {
        await (client.transport as StreamableHTTPClientTransport).terminateSession();
        await client.close();
      }
      await waitFor(() => childrenOf(server.pid).length <= 1, "the ended sessions' upstreams to exit");
      endedLive.push(await inspector.liveMemory());
    }
    await inspector.close();
    const live = (memory: LiveMemory) => memory.heapUsed + memory.external;
    const kib = (bytes: number) => (bytes / 1024).toFixed(1);
    const leftPerEnded =
      (live(endedLive.at(-1) as LiveMemory) - live(endedLive[0] as LiveMemory)) /
      (sessions * (SESSION_ROUNDS - 1));
    lines.push(
      '| measure | value |',
      '| --- | ---: |',
      `| gateway RSS idle (started, no session) | ${mib(idle)} MiB |`,
      `| gateway RSS with 1 session (one call done) | ${mib(oneSession)} MiB |`,
      `| gateway RSS with ${sessions + 1} sessions (one call each) | ${mib(withSessions)} MiB |`,
      `| gateway RSS per open session (the gateway process only; each stateful session also starts its own stdio upstream process) | ${rssPerSession(withSessions - oneSession, sessions)} |`,
      `| gateway live memory per open session (JS heap + external after a full GC, ${sessions} sessions with a call each) | ${kib((live(openLive as LiveMemory) - live(oneLive)) / sessions)} KiB |`,
      `| gateway live memory left per ended session (after a full GC; ${sessions * (SESSION_ROUNDS - 1)} sessions ended after the first ${sessions}) | ${kib(leftPerEnded)} KiB |`,
      ...receiptHeapPer10k(),
    );

    const client = clients[0] as Client;
    const samples: { calls: number; rss: number }[] = [];
    const step = Math.max(1, Math.floor(soakCalls / 10));
    let done = 0;
    const started = performance.now();
    while (done < soakCalls) {
      const load = await drive({
        calls: Math.min(step, soakCalls - done),
        concurrency: 16,
        call: async (i) => {
          const result = (await client.callTool({
            name: 'echo',
            arguments: { id: `soak-${done}-${i}` },
          })) as CallToolResult;
          return result;
        },
      });
      if (load.errors > 0) throw new Error(`soak: ${load.errors} calls failed: ${load.firstError}`);
      done += load.samples.length;
      samples.push({ calls: done, rss: rssOf(server.pid) });
    }
    const seconds = (performance.now() - started) / 1000;
    // Warm-up: the first half (JIT, SQLite's page cache, the receipt book filling to its steady
    // size); "no growth after warm-up" compares the end with the RSS at half way.
    const half = samples[Math.max(0, Math.floor(samples.length / 2) - 1)] as { rss: number };
    const last = samples.at(-1) as { rss: number };
    const peak = Math.max(...samples.map((sample) => sample.rss));
    const growth = last.rss - half.rss;
    lines.push(
      '',
      `Soak: ${done.toLocaleString('en')} calls, 16 in flight, one session, every call a new execution, ` +
        `${perSec(done / seconds)} calls/s. RSS after each tenth (MiB): ${samples.map((sample) => mib(sample.rss)).join(', ')}.`,
      '',
      '| soak | RSS at half way (after warm-up) | RSS at the end | peak | end − half way |',
      '| --- | ---: | ---: | ---: | ---: |',
      `| ${done.toLocaleString('en')} calls | ${mib(half.rss)} MiB | ${mib(last.rss)} MiB | ${mib(peak)} MiB | ${growth >= 0 ? '+' : ''}${mib(growth)} MiB (${((growth / half.rss) * 100).toFixed(1)} %) |`,
    );
  } finally {
    await inspector.close();
    for (const client of clients) await client.close().catch(() => undefined);
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return lines;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const line of receiptCostAtBound(10_000)) console.log(line);
  console.log('');
  for (const line of await benchGatewayMemory(Number(process.env.BENCH_SOAK_CALLS ?? 100_000)))
    console.log(line);
}
