/**
 * `idem gateway` against plain MCP bridges, as ratios within one run.
 *
 * One client (the official SDK `Client` over `StreamableHTTPClientTransport`,
 * one session per series) calls one trivial tool (`echo`, no annotations:
 * bench/fixtures/trivial-server.ts) through:
 *
 *   1. direct — the same server served over Streamable HTTP by itself;
 *   2. mcp-proxy — stdio → Streamable HTTP bridge, its own process;
 *   3. supergateway — `--stdio … --outputTransport streamableHttp --stateful`, its own process;
 *   4. idem gateway — the CLI as its own process (`node dist/cli/main.js`, as
 *      `npx idem` runs it; dist/ is rebuilt first if stale), SQLite store in a fresh data
 *      directory; the tool has no contract (Idem's cautious default for a tool with
 *      effects, as a user who adds nothing gets it) and a new `id` per call makes every
 *      call a new execution: claimed, dispatched, recorded and journaled. A diagnostic
 *      series gives it `replay: keyed` (its answer waits for its outcome's write).
 *
 * Each series runs sequentially (1 in flight) and with N calls in flight, after
 * a warm-up on its own session. The measured calls are split into rounds and
 * the series alternate within each round, so that a change in the machine's
 * load falls on all of them alike. A bridge that cannot start is reported as
 * "unavailable: <reason>"; a series that runs out of its time budget reports
 * what it measured.
 *
 * Session start: a new SDK client's connect (initialize, notifications/initialized) until its
 * first tools/list is answered, K sessions per path (idem, mcp-proxy, supergateway), one path
 * after another within each round and each session ended (DELETE) before the next; after one
 * warm-up session per path. Every path starts its upstream process(es) its own way: supergateway
 * --stateful one per session, Idem one per session (the `idem` series from a process started ahead,
 * `upstreams.<name>.spare: true`: docs/gateway.md; the diagnostic `idem-no-spare`, the default, at the initialize).
 *
 * Standalone: `npx tsx bench/gateway.ts` (BENCH_CALLS calls per series, default
 * 5,000; K = BENCH_GATEWAY_SESSIONS, default BENCH_CALLS/500 within 3–20; BENCH_GATEWAY_SERIES=idem,supergateway runs only those series;
 * BENCH_GATEWAY_SERIES=session-start only the session starts (on the paths also named, if any);
 * BENCH_GATEWAY_IN_FLIGHT=1 only that concurrency; BENCH_GATEWAY_PROFILE=<dir> writes a V8 CPU profile of each series'
 * server process into <dir>/<series>/; BENCH_GATEWAY_TIMING=<dir> writes the
 * median time each server spends on the way in, at the upstream and on the way
 * back (bench/timing-hooks.mjs) into <dir>/<series>/).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Database from 'better-sqlite3';
import { median, SyncProbe } from './disk-sync.js';
import {
  builtCli,
  connectClient,
  cpuQuiet,
  drive,
  freePort,
  type Load,
  perSec,
  REPO_ROOT,
  ratio,
  reason,
  type ServerProcess,
  type Summary,
  startServerProcess,
  summarize,
  TRIVIAL_SERVER,
  trivialUpstream,
  us,
} from './harness.js';
import { judge } from './targets.js';

const ROUNDS = 3;
/** Receipts an Idem gateway may hold in the benchmarks (see the config below). */
export const BENCH_RECEIPTS_MAX = 1_000_000;
const EXECUTION_ID = 'io.idem/execution-id';
const REPLAYED = 'io.idem/replayed';

interface Target {
  key:
    | 'direct'
    | 'mcp-proxy'
    | 'supergateway'
    | 'idem'
    | 'idem-stateless'
    | 'idem-memory'
    | 'idem-keyed'
    | 'idem-passthrough'
    | 'idem-stateless-passthrough'
    | 'idem-no-spare';
  label: string;
  start(): Promise<ServerProcess>;
  /** Throws when a result is not what this series must return. */
  check?(result: CallToolResult): void;
}

function packageBin(name: string): { path: string; version: string } {
  const dir = join(REPO_ROOT, 'node_modules', name);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    version: string;
    bin?: string | Record<string, string>;
  };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[name];
  if (!bin) throw new Error(`${name} declares no bin "${name}"`);
  return { path: join(dir, bin), version: manifest.version };
}

/**
 * `idem gateway --config … --listen 127.0.0.1:0` with one contract for `echo`: the CLI
 * as a user runs it, `node dist/cli/main.js` (built first if stale: harness `builtCli`).
 */
function idemTarget(options: {
  key: Target['key'];
  label: string;
  dir: string;
  /** The tool's contract in the gateway config; none: the default for a tool with effects. */
  contract?: Record<string, unknown>;
  store?: Record<string, unknown>;
  /** The stateless front (`listen.http.stateless`): no sessions, every POST stands alone. */
  stateless?: boolean;
  /** Without `upstreams.<name>.spare: true` (the default): each session starts its upstream process at its initialize. */
  noSpare?: boolean;
  instruments: Instruments;
}): Target {
  const newExecution = options.contract?.replay !== 'read_only';
  return {
    key: options.key,
    label: options.label,
    start: () => {
      mkdirSync(options.dir, { recursive: true });
      const configPath = join(options.dir, 'idem.json');
      writeFileSync(
        configPath,
        JSON.stringify({
          data_dir: options.dir,
          ...(options.store ? { store: options.store } : {}),
          ...(options.stateless ? { listen: { http: { stateless: true } } } : {}),
          upstreams: {
            trivial: { ...trivialUpstream(), cwd: REPO_ROOT, ...(options.noSpare ? {} : { spare: true }) },
          },
          ...(options.contract ? { tools: { echo: options.contract } } : {}),
          // The defaults (receipts held 2 minutes, at most 10,000 per actor) refuse one actor's calls
          // past the 10,000th in 2 minutes with IDEM_RECEIPTS_FULL (~83 calls/s sustained); the
          // bench's one client sends more than that at the default size.
          receipts: { max: BENCH_RECEIPTS_MAX, max_per_actor: BENCH_RECEIPTS_MAX },
        }),
      );
      return startServerProcess({
        name: options.key,
        env: instrumentEnv(options.instruments, options.key),
        command: process.execPath,
        args: [
          ...profileFlags(options.instruments, options.key),
          builtCli(),
          'gateway',
          '--config',
          configPath,
          '--listen',
          '127.0.0.1:0',
        ],
        ready: (out) => /Streamable HTTP on (http:\S+)/.exec(out)?.[1],
      });
    },
    ...(newExecution
      ? {
          check: (result: CallToolResult) => {
            // A new intent per call: each answer must come from a new execution, never a replay.
            const meta = result._meta as Record<string, unknown> | undefined;
            if (typeof meta?.[EXECUTION_ID] !== 'string' || meta[REPLAYED] === true)
              throw new Error(`not a new execution: ${JSON.stringify(result).slice(0, 200)}`);
          },
        }
      : {}),
  };
}

/** Optional instruments on every series' server process (see benchGateway's options). */
interface Instruments {
  profileDir?: string | undefined;
  timingDir?: string | undefined;
}

const TIMING_HOOKS = join(REPO_ROOT, 'bench/timing-hooks.mjs');

/**
 * Node flags for a series' server process: `--cpu-prof` into `<profileDir>/<series>/`,
 * the timing hooks (bench/timing-hooks.mjs) writing into `<timingDir>/<series>/`.
 */
function profileFlags(instruments: Instruments, key: string): string[] {
  return [
    ...(instruments.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(instruments.profileDir, key)}`] : []),
    ...(instruments.timingDir ? ['--import', TIMING_HOOKS] : []),
  ];
}

function instrumentEnv(instruments: Instruments, key: string): Record<string, string> {
  return instruments.timingDir ? { IDEM_BENCH_TIMING_DIR: join(instruments.timingDir, key) } : {};
}

function targets(work: string, instruments: Instruments, diagnostics: boolean): Target[] {
  const upstream = trivialUpstream();
  const upstreamLine = [upstream.command, ...upstream.args].join(' ');
  const version = (name: string) => {
    try {
      return ` ${packageBin(name).version}`;
    } catch {
      return '';
    }
  };
  return [
    {
      key: 'direct',
      label: 'direct (the SDK server on Streamable HTTP)',
      start: () =>
        startServerProcess({
          name: 'direct',
          command: process.execPath,
          args: [...profileFlags(instruments, 'direct'), '--import', 'tsx', TRIVIAL_SERVER, '--http'],
          env: instrumentEnv(instruments, 'direct'),
          ready: (out) => /listening on (http:\S+)/.exec(out)?.[1],
        }),
    },
    {
      key: 'mcp-proxy',
      label: `mcp-proxy${version('mcp-proxy')}`,
      start: async () => {
        const port = await freePort();
        return startServerProcess({
          name: 'mcp-proxy',
          env: instrumentEnv(instruments, 'mcp-proxy'),
          command: process.execPath,
          args: [
            ...profileFlags(instruments, 'mcp-proxy'),
            packageBin('mcp-proxy').path,
            '--host',
            '127.0.0.1',
            '--port',
            String(port),
            '--server',
            'stream',
            '--',
            upstream.command,
            ...upstream.args,
          ],
          // It prints "starting server on port" before it listens: ready when it accepts connections.
          listensOn: port,
          ready: () => `http://127.0.0.1:${port}/mcp`,
        });
      },
    },
    {
      key: 'supergateway',
      label: `supergateway${version('supergateway')} (--stateful)`,
      start: async () => {
        const port = await freePort();
        return startServerProcess({
          name: 'supergateway',
          env: instrumentEnv(instruments, 'supergateway'),
          command: process.execPath,
          args: [
            ...profileFlags(instruments, 'supergateway'),
            packageBin('supergateway').path,
            '--stdio',
            upstreamLine,
            '--outputTransport',
            'streamableHttp',
            // Stateless mode starts a new upstream process for every POST; stateful keeps one per session.
            '--stateful',
            '--port',
            String(port),
            '--logLevel',
            'none',
          ],
          // Quiet, like the other series: at "info" it logs every message, which costs it time.
          listensOn: port,
          ready: () => `http://127.0.0.1:${port}/mcp`,
        });
      },
    },
    idemTarget({
      key: 'idem',
      label: 'idem gateway (SQLite; every call claimed + journaled)',
      dir: join(work, 'idem'),
      instruments,
    }),
    idemTarget({
      key: 'idem-stateless',
      label: 'idem gateway, stateless front (SQLite; every call claimed + journaled)',
      dir: join(work, 'idem-stateless'),
      stateless: true,
      instruments,
    }),
    ...(diagnostics
      ? [
          idemTarget({
            key: 'idem-memory',
            label: 'diagnostic: idem gateway, memory store (claimed + journaled in memory)',
            dir: join(work, 'idem-memory'),
            store: { kind: 'memory' },
            instruments,
          }),
          // The answer waits for its outcome's commit (a keyed tool's recovery sends again): against idem.
          idemTarget({
            key: 'idem-keyed',
            label:
              'diagnostic: idem gateway, tool `replay: keyed` (SQLite; answer after its outcome is written)',
            dir: join(work, 'idem-keyed'),
            contract: { replay: 'keyed', scope: { business_key: 'id' } },
            instruments,
          }),
          idemTarget({
            key: 'idem-passthrough',
            label: 'diagnostic: idem gateway, tool declared read_only (passed through: no execution)',
            dir: join(work, 'idem-passthrough'),
            contract: { replay: 'read_only' },
            instruments,
          }),
          // The stateless front's own cost per POST, without the store: against idem-passthrough.
          idemTarget({
            key: 'idem-stateless-passthrough',
            label: 'diagnostic: idem gateway, stateless front, tool declared read_only (passed through)',
            dir: join(work, 'idem-stateless-passthrough'),
            contract: { replay: 'read_only' },
            stateless: true,
            instruments,
          }),
          // Session starts only: what a session start costs without a process started ahead.
          idemTarget({
            key: 'idem-no-spare',
            label: 'diagnostic: idem gateway, no spare (the default)',
            dir: join(work, 'idem-no-spare'),
            contract: { replay: 'keyed', scope: { business_key: 'id' } },
            noSpare: true,
            instruments,
          }),
        ]
      : []),
  ];
}

interface Running {
  target: Target;
  server?: ServerProcess;
  unavailable?: string;
}

/** Rows of one concurrency level; Idem's ratios against every other series. */
function tableRows(
  inFlight: number,
  results: Map<Target['key'], Summary | string>,
  running: Running[],
): string[] {
  const idem = results.get('idem');
  return running.map(({ target }) => {
    const result = results.get(target.key);
    if (typeof result === 'string' || result === undefined)
      return `| ${target.label} | ${inFlight} | unavailable: ${result ?? 'not run'} | | | | | |`;
    const idemSummary = typeof idem === 'object' ? idem : undefined;
    const p50Ratio = idemSummary ? idemSummary.p50 / result.p50 : Number.NaN;
    const throughputRatio = idemSummary ? idemSummary.perSecond / result.perSecond : Number.NaN;
    const notes = [
      result.errors > 0 ? `${result.errors} errors (${reason(result.firstError)})` : '',
      result.cut ? 'time budget ran out' : '',
    ]
      .filter(Boolean)
      .join('; ');
    const self = target.key === 'idem';
    return `| ${target.label} | ${inFlight} | ${result.calls.toLocaleString('en')}${notes ? ` (${notes})` : ''} | ${us(result.p50)} | ${us(result.p99)} | ${perSec(result.perSecond)} | ${self ? '—' : ratio(p50Ratio)} | ${self ? '—' : ratio(throughputRatio)} |`;
  });
}

/** The stateless front against the stateful one, when both ran. */
function judgeStateless(inFlight: number, results: Map<Target['key'], Summary | string>): void {
  const stateful = results.get('idem');
  const stateless = results.get('idem-stateless');
  if (typeof stateful !== 'object' || typeof stateless !== 'object') return;
  judge(
    `stateless front no slower than stateful (p50, ${inFlight} in flight)`,
    ratio(stateless.p50 / stateful.p50),
    stateless.p50 <= stateful.p50,
  );
}

/** Syncs timed after each round, at the pace of that round's Idem calls. */
const SYNCS_PER_ROUND = 100;

/** The time from one Idem call to the next in a round, ms, whole (what a timer can wait). */
function callIntervalMs(load: Load): number {
  return Math.max(1, Math.round((load.seconds * 1000) / load.samples.length));
}

/**
 * Idem's gap to the fastest bridge in this run, as a multiple of one fdatasync at the pace of
 * Idem's calls, timed between the rounds on the disk under Idem's store (issue 30: a durable
 * call's floor is one sync, so the gap is read in syncs). At p50 with one call in flight, and
 * per call of wall time from calls/s (1/Idem's − 1/the bridge's).
 */
function gapInSyncs(
  inFlight: number,
  results: Map<Target['key'], Summary | string>,
  running: Running[],
  syncs: number[],
  idemRounds: Load[],
): string[] {
  const idem = results.get('idem');
  const bridges = running
    .filter(({ target }) => target.key === 'mcp-proxy' || target.key === 'supergateway')
    .map(({ target }) => ({ label: target.label, summary: results.get(target.key) }))
    .filter((b): b is { label: string; summary: Summary } => typeof b.summary === 'object');
  if (typeof idem !== 'object' || bridges.length === 0) return [];
  const sync = median(syncs);
  const idle = idemRounds.map(callIntervalMs).join(', ');
  const fastest = bridges.reduce((a, b) => (b.summary.p50 < a.summary.p50 ? b : a));
  const busiest = bridges.reduce((a, b) => (b.summary.perSecond > a.summary.perSecond ? b : a));
  const p50Gap = idem.p50 - fastest.summary.p50;
  const wallGap = 1e6 / idem.perSecond - 1e6 / busiest.summary.perSecond;
  const inSyncs = (gap: number) =>
    gap <= 0 ? `none: Idem is ${us(-gap)} µs ahead` : `+${us(gap)} µs, ${(gap / sync).toFixed(2)} syncs`;
  // With calls queued (more than one in flight) a p50 is mostly waiting: only the wall time per call says.
  if (inFlight === 1)
    judge(
      'gateway p50 ≤ 1.0× the fastest bridge (durable default, 1 in flight)',
      `${ratio(idem.p50 / fastest.summary.p50)} ${fastest.label}; the gap ${(p50Gap / sync).toFixed(2)} syncs at call pace`,
      idem.p50 <= fastest.summary.p50,
    );
  else
    judge(
      `gateway calls/s ≥ 1.0× the busiest bridge (durable default, ${inFlight} in flight)`,
      `${ratio(idem.perSecond / busiest.summary.perSecond)} ${busiest.label}; the gap ${(wallGap / sync).toFixed(2)} syncs per call`,
      idem.perSecond >= busiest.summary.perSecond,
    );
  const gaps = [
    ...(inFlight === 1 ? [`at p50 to the fastest bridge here (${fastest.label}) ${inSyncs(p50Gap)}`] : []),
    `per call of wall time, from calls/s, to ${busiest.label} ${inSyncs(wallGap)}`,
  ];
  return [
    `${inFlight} in flight: one fdatasync at Idem's call pace (${syncs.length} syncs between the rounds, each after ${idle} ms idle, ` +
      `under Idem's data directory) takes ${us(sync)} µs p50. Idem's gap ${gaps.join('; ')}.`,
  ];
}

const SESSION_START = 'session-start';
const SESSION_START_PATHS: Target['key'][] = ['idem', 'mcp-proxy', 'supergateway', 'idem-no-spare'];
/** Series that run the session starts only. */
const SESSION_STARTS_ONLY: Target['key'][] = ['idem-no-spare'];

/**
 * One session start, ms: a new SDK client's connect (initialize, then notifications/initialized)
 * until its first tools/list is answered. The session is ended (DELETE) and closed afterwards,
 * outside the time: its upstream process goes with it.
 */
async function sessionStart(url: string): Promise<number> {
  const start = performance.now();
  const client = await connectClient(url, 'idem-bench-session');
  try {
    const listed = await client.listTools();
    const elapsed = performance.now() - start;
    if (!listed.tools.some((tool) => tool.name === 'echo'))
      throw new Error(`tools/list without echo: ${JSON.stringify(listed).slice(0, 200)}`);
    return elapsed;
  } finally {
    await (client.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  }
}

/**
 * Session starts on idem, mcp-proxy and supergateway (those of `running`): one warm-up session
 * per path, then `k` each, one path after another in each round (the order rotated every round),
 * p50 and max, and Idem's p50 ÷ each bridge's.
 */
/** Idem's default (no process started ahead) against each bridge, when both were measured. */
function withoutSpare(p50: (key: Target['key']) => number): string[] {
  const idem = p50('idem-no-spare');
  if (Number.isFinite(idem) && Number.isFinite(p50('supergateway')))
    judge(
      'session start ≤ 1.0× supergateway (the default: no spare)',
      `${ratio(idem / p50('supergateway'))} (${idem.toFixed(0)} / ${p50('supergateway').toFixed(0)} ms)`,
      idem <= p50('supergateway'),
    );
  const against = (['supergateway', 'mcp-proxy'] as const)
    .filter((key) => Number.isFinite(p50(key)) && Number.isFinite(idem))
    .map((key) => `${ratio(idem / p50(key))} ${key}'s`);
  return against.length > 0
    ? ['', `Without a spare (the default), Idem's session start p50 is ${against.join(' and ')}.`]
    : [];
}

async function sessionStarts(running: Running[], k: number): Promise<string[]> {
  const paths = running.filter(({ target }) => SESSION_START_PATHS.includes(target.key));
  const samples = new Map<Target['key'], number[]>();
  const failed = new Map<Target['key'], string>();
  const groups = paths.flatMap(({ server }) => (server ? [server.pid] : []));
  for (const { target, server, unavailable } of paths) {
    if (!server) {
      failed.set(target.key, unavailable ?? 'did not start');
      continue;
    }
    try {
      await cpuQuiet(groups);
      await sessionStart(server.url);
      samples.set(target.key, []);
    } catch (error) {
      failed.set(target.key, reason(error));
    }
  }
  for (let round = 0; round < k; round++) {
    const order = [...samples.keys()];
    for (let r = 0; r < round % Math.max(1, order.length); r++) order.push(order.shift() as Target['key']);
    for (const key of order) {
      const server = paths.find((p) => p.target.key === key)?.server as ServerProcess;
      try {
        // What the last session left running (its upstream exiting, Idem's spare being replaced)
        // must not land in this one's time.
        await cpuQuiet(groups);
        samples.get(key)?.push(await sessionStart(server.url));
      } catch (error) {
        if (!failed.has(key)) failed.set(key, reason(error));
      }
    }
  }
  const p50 = (key: Target['key']) => {
    const sorted = [...(samples.get(key) ?? [])].sort((a, b) => a - b);
    return sorted.length ? (sorted[Math.floor(sorted.length / 2)] as number) : Number.NaN;
  };
  const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : '–');
  const idem = p50('idem');
  return [
    `Session start: a new SDK client's connect (initialize) until its first tools/list is answered, ` +
      `${k} sessions per path, the paths alternating (one session each in turn), each session ended before the next ` +
      'and the servers left to go idle (no CPU for 200 ms) before the next; ' +
      "after one warm-up session per path. Ratio: Idem p50 ÷ the row's (≤ 1.00: Idem starts a session no slower).",
    '',
    '| path | sessions | p50 ms | max ms | Idem p50 ÷ this |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...paths.map(({ target }) => {
      const measured = samples.get(target.key) ?? [];
      const error = failed.get(target.key);
      if (measured.length === 0) return `| ${target.label} | 0 | unavailable: ${error ?? 'not run'} | | |`;
      const note = error ? ` (${k - measured.length} failed: ${error})` : '';
      return `| ${target.label} | ${measured.length}${note} | ${ms(p50(target.key))} | ${ms(Math.max(...measured))} | ${target.key === 'idem' ? '—' : ratio(idem / p50(target.key))} |`;
    }),
    ...withoutSpare(p50),
  ];
}

/** What Idem's store holds after the run: one execution per call, and its journal rows. */
function idemStoreCounts(dbPath: string): string {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const executions = (db.prepare('SELECT count(*) AS n FROM executions').get() as { n: number }).n;
    const completed = (
      db.prepare("SELECT count(*) AS n FROM executions WHERE state = 'completed'").get() as { n: number }
    ).n;
    // Events by kind, a row of several (ADR 0052) unfolded; and the rows they took.
    const kinds = db
      .prepare(
        `SELECT kind, count(*) AS n FROM (
           SELECT kind FROM activity_journal WHERE events IS NULL
           UNION ALL SELECT e.value ->> 0 FROM activity_journal j, json_each(j.detail) e WHERE j.events IS NOT NULL)
         GROUP BY kind ORDER BY kind`,
      )
      .all() as { kind: string; n: number }[];
    const journal = kinds.reduce((sum, k) => sum + k.n, 0);
    const rows = db.prepare('SELECT count(*) FROM activity_journal').pluck().get() as number;
    return (
      `Idem's store after the run: ${executions.toLocaleString('en')} executions (${completed.toLocaleString('en')} completed), ` +
      `${journal.toLocaleString('en')} activity journal events in ${rows.toLocaleString('en')} rows (${kinds.map((k) => `${k.kind} ${k.n.toLocaleString('en')}`).join(', ')})`
    );
  } finally {
    db.close();
  }
}

export async function benchGateway(options: {
  calls: number;
  concurrency: number[];
  /** Time budget of one series (all its rounds), ms; default 120 s. */
  budgetMs?: number;
  /** Write a V8 CPU profile of every series' server process into `<dir>/<series>/`. */
  profileDir?: string;
  /** Write where each server's latency goes (bench/timing-hooks.mjs) into `<dir>/<series>/`. */
  timingDir?: string;
  /** Also run Idem with a memory store and with the tool passed through (read_only): where the time goes. */
  diagnostics?: boolean;
  /**
   * Only these series (their keys: direct, mcp-proxy, supergateway, idem, idem-stateless, idem-memory, idem-keyed, idem-passthrough, …);
   * `session-start` among them: only the session starts, on the paths also named (default: all three).
   */
  series?: string[];
  /** Session starts per path (K); 0: none. Default: calls/500, within 3–20. */
  sessions?: number;
}): Promise<string[]> {
  const work = mkdtempSync(join(tmpdir(), 'idem-bench-gateway-'));
  const budgetMs = options.budgetMs ?? Number(process.env.BENCH_GATEWAY_BUDGET_MS ?? 120_000);
  const onlySessionStarts = options.series?.includes(SESSION_START) ?? false;
  const named = options.series?.filter((key) => key !== SESSION_START);
  const running: Running[] = targets(
    work,
    { profileDir: options.profileDir, timingDir: options.timingDir },
    options.diagnostics ?? true,
  )
    .filter((target) => !onlySessionStarts || SESSION_START_PATHS.includes(target.key))
    .filter((target) => !named?.length || named.includes(target.key))
    .map((target) => ({ target }));
  const sessionCount = options.sessions ?? Math.min(20, Math.max(3, Math.round(options.calls / 500)));
  const lines: string[] = [];
  const callsIssued = { idem: 0 };
  const probe = new SyncProbe(work);
  try {
    for (const entry of running) {
      try {
        entry.server = await entry.target.start();
      } catch (error) {
        entry.unavailable = reason(error);
      }
    }
    if (!onlySessionStarts) {
      const calling = running.filter(({ target }) => !SESSION_STARTS_ONLY.includes(target.key));
      const warmup = Math.min(1_000, Math.max(50, Math.floor(options.calls / 5)));
      const perRound = Math.ceil(options.calls / ROUNDS);
      lines.push(
        `${options.calls.toLocaleString('en')} calls per series in ${ROUNDS} rounds, series alternating within each round ` +
          `(+${warmup} warm-up calls per series on its own session); node ${process.version}; every series starts ` +
          `its upstream as \`node --import tsx bench/fixtures/trivial-server.ts\`. Ratios are Idem's figure ÷ the row's ` +
          '(p50 ratio ≤ 1.00 and throughput ratio ≥ 1.00 mean Idem is no slower).',
        '',
        '| series | in flight | calls | p50 µs | p99 µs | calls/s | Idem p50 ÷ this | Idem calls/s ÷ this |',
        '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      );
      const gaps: string[] = [];
      for (const inFlight of options.concurrency) {
        const sessions = new Map<Target['key'], Client>();
        const loads = new Map<Target['key'], Load[]>();
        const results = new Map<Target['key'], Summary | string>();
        let counter = 0;
        const callOn = (target: Target, client: Client) => async (i: number) => {
          if (target.key === 'idem') callsIssued.idem++;
          const result = (await client.callTool({
            name: 'echo',
            arguments: { id: `c${inFlight}-${counter++}-${i}` },
          })) as CallToolResult;
          if (!result.isError) target.check?.(result); // an error result is counted as one by drive()
          return result;
        };
        for (const { target, server, unavailable } of calling) {
          if (!server) {
            results.set(target.key, unavailable ?? 'did not start');
            continue;
          }
          try {
            const client = await connectClient(server.url);
            sessions.set(target.key, client);
            const warm = await drive({
              calls: warmup,
              concurrency: inFlight,
              call: callOn(target, client),
              budgetMs,
            });
            if (warm.errors > 0) throw new Error(`warm-up: ${warm.errors} errors: ${warm.firstError}`);
            loads.set(target.key, []);
          } catch (error) {
            results.set(target.key, reason(error));
          }
        }
        const syncs: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          const order = [...loads.keys()];
          // Rotate the order each round: no series always runs first (or last).
          for (let k = 0; k < round; k++) order.push(order.shift() as Target['key']);
          for (const key of order) {
            const target = calling.find((r) => r.target.key === key)?.target as Target;
            const load = await drive({
              calls: perRound,
              concurrency: inFlight,
              call: callOn(target, sessions.get(key) as Client),
              budgetMs: budgetMs / ROUNDS,
            });
            loads.get(key)?.push(load);
          }
          // One sync at the pace of this round's Idem calls, on the disk under Idem's store.
          const idemRound = loads.get('idem')?.at(-1);
          if (idemRound && idemRound.samples.length > 0)
            syncs.push(...(await probe.timeSyncs(SYNCS_PER_ROUND, callIntervalMs(idemRound))));
        }
        for (const [key, series] of loads) results.set(key, summarize(series));
        for (const client of sessions.values()) await client.close().catch(() => {});
        lines.push(...tableRows(inFlight, results, calling));
        judgeStateless(inFlight, results);
        if (syncs.length > 0)
          gaps.push(...gapInSyncs(inFlight, results, calling, syncs, loads.get('idem') ?? []));
      }
      if (gaps.length > 0) lines.push('', ...gaps);
    }
    if (sessionCount > 0)
      lines.push(...(onlySessionStarts ? [] : ['']), ...(await sessionStarts(running, sessionCount)));
  } finally {
    probe.close();
    for (const { server } of running) await server?.stop().catch(() => {});
  }
  try {
    const idem = running.find((r) => r.target.key === 'idem');
    if (idem?.server && !onlySessionStarts) {
      lines.push(
        '',
        `${idemStoreCounts(join(work, 'idem', 'idem.db'))}; Idem calls sent: ${callsIssued.idem.toLocaleString('en')}.`,
      );
    }
  } catch (error) {
    lines.push('', `Idem's store could not be read after the run: ${reason(error)}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return lines;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const calls = Number(process.env.BENCH_CALLS ?? 5_000);
  const profileDir = process.env.BENCH_GATEWAY_PROFILE;
  const timingDir = process.env.BENCH_GATEWAY_TIMING;
  const series = process.env.BENCH_GATEWAY_SERIES?.split(',');
  const sessions = process.env.BENCH_GATEWAY_SESSIONS;
  for (const line of await benchGateway({
    calls,
    ...(sessions ? { sessions: Number(sessions) } : {}),
    concurrency: (process.env.BENCH_GATEWAY_IN_FLIGHT ?? '1,16').split(',').map(Number),
    ...(series ? { series } : {}),
    ...(profileDir ? { profileDir } : {}),
    ...(timingDir ? { timingDir } : {}),
  }))
    console.log(line);
}
