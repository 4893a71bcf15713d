/**
 * Several `idem gateway` processes on one PostgreSQL database: calls/s and
 * latency through fleets of 1, 2 and 4 gateways, as a ratio to 1 gateway.
 *
 * Every fleet has its own schema in the one database, and its gateways share
 * one fingerprint key (`fingerprint_key_file`), as an installation must. The
 * upstream is the trivial stdio server (bench/fixtures/trivial-server.ts);
 * the tool's contract (replay: keyed, business key `id`) and a new `id` per
 * call make every call a new execution: claimed and journaled in PostgreSQL.
 *
 * The load is the same for every fleet: the same number of client sessions
 * (official SDK client, Streamable HTTP), spread evenly over the fleet's
 * gateways, with the same total number of calls in flight. All fleets run
 * side by side and take turns in rounds, so a change in the machine's load
 * falls on all of them alike.
 *
 * Standalone: `npx tsx bench/fleet.ts` (BENCH_CALLS calls per fleet, default
 * 5,000; IDEM_PG_URL, or else a throwaway server with fsync on).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { PG_URL_VARIABLE, startThrowawayPostgres } from '../test/support/postgres.js';
import { BENCH_RECEIPTS_MAX } from './gateway.js';
import {
  builtCli,
  connectClient,
  drive,
  type Load,
  perSec,
  REPO_ROOT,
  ratio,
  reason,
  type ServerProcess,
  startServerProcess,
  summarize,
  trivialUpstream,
  us,
} from './harness.js';

const ROUNDS = 3;

interface Fleet {
  size: number;
  schema: string;
  gateways: ServerProcess[];
  /** One entry per client session: the client and its share of the calls in flight. */
  clients: { client: Client; inFlight: number }[];
  loads: Load[];
  issued: number;
  /** Where the time goes, summed over the measured rounds. */
  probe: Probe;
  unavailable?: string;
}

async function startFleet(options: {
  size: number;
  url: string;
  work: string;
  keyFile: string;
  schema: string;
}): Promise<ServerProcess[]> {
  const starting = Array.from({ length: options.size }, async (_, g) => {
    const dir = join(options.work, `${options.schema}-gw${g + 1}`);
    mkdirSync(dir, { recursive: true });
    const configPath = join(dir, 'idem.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        data_dir: dir,
        fingerprint_key_file: options.keyFile,
        store: { kind: 'postgres', url: options.url, schema: options.schema },
        upstreams: { trivial: { ...trivialUpstream(), cwd: REPO_ROOT } },
        tools: { echo: { replay: 'keyed', scope: { business_key: 'id' } } },
        // As in bench/gateway.ts: the defaults refuse one actor's calls past 10,000 in 2 minutes.
        receipts: { max: BENCH_RECEIPTS_MAX, max_per_actor: BENCH_RECEIPTS_MAX },
      }),
    );
    return startServerProcess({
      name: `gateway ${g + 1} of ${options.size}`,
      command: process.execPath,
      args: [builtCli(), 'gateway', '--config', configPath, '--listen', '127.0.0.1:0'],
      ready: (out) => /Streamable HTTP on (http:\S+)/.exec(out)?.[1],
    });
  });
  const settled = await Promise.allSettled(starting);
  const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) {
    for (const gateway of started) await gateway.stop().catch(() => {});
    throw failed.reason;
  }
  return started;
}

interface Probe {
  /** Sum over samples of the server's backends waiting for a lock (a row lock, mostly). */
  lockWaiters: number;
  samples: number;
  /** CPU of the gateway processes themselves (not their upstreams), clock ticks. */
  gatewayTicks: number;
  /** The whole machine's busy and total CPU, clock ticks (every core). */
  busyTicks: number;
  totalTicks: number;
}

/** Linux clock ticks per second (USER_HZ): 100 on every mainstream kernel. */
const TICKS_PER_SECOND = 100;

/** utime + stime of a process, in clock ticks; 0 where /proc cannot be read. */
function processTicks(pid: number): number {
  try {
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** The machine's busy and total CPU ticks since boot (/proc/stat); zeros where it cannot be read. */
function machineTicks(): { busy: number; total: number } {
  try {
    const [, ...values] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] as string).trim().split(/\s+/);
    const ticks = values.slice(0, 8).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    // idle and iowait are not busy.
    return { busy: total - (ticks[3] ?? 0) - (ticks[4] ?? 0), total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/**
 * Runs `work` while sampling, every 20 ms, how many of the server's backends
 * wait for a lock, and measuring the CPU the gateways and the machine spend.
 */
async function probed<T>(fleet: Fleet, admin: pg.Client, work: () => Promise<T>): Promise<T> {
  const gatewayBefore = fleet.gateways.reduce((sum, g) => sum + processTicks(g.pid), 0);
  const machineBefore = machineTicks();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await admin.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
      );
      fleet.probe.lockWaiters += rows[0]?.n ?? 0;
      fleet.probe.samples++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  try {
    return await work();
  } finally {
    sampling = false;
    await sampler.catch(() => {});
    const machineAfter = machineTicks();
    fleet.probe.gatewayTicks +=
      fleet.gateways.reduce((sum, g) => sum + processTicks(g.pid), 0) - gatewayBefore;
    fleet.probe.busyTicks += machineAfter.busy - machineBefore.busy;
    fleet.probe.totalTicks += machineAfter.total - machineBefore.total;
  }
}

/** `total` split into `parts` as evenly as integers allow. */
function split(total: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));
}

/** One batch on one fleet: every client runs its share of `calls` at its share of the calls in flight, all at once. */
async function runFleet(fleet: Fleet, calls: number, budgetMs: number, tag: string): Promise<Load> {
  const shares = split(calls, fleet.clients.length);
  const start = performance.now();
  const loads = await Promise.all(
    fleet.clients.map(({ client, inFlight }, c) =>
      drive({
        calls: shares[c] as number,
        concurrency: inFlight,
        budgetMs,
        call: async (i) => {
          fleet.issued++;
          const result = (await client.callTool({
            name: 'echo',
            arguments: { id: `${tag}-c${c}-${i}` },
          })) as CallToolResult;
          if (result.isError) return result; // counted as an error by drive()
          const meta = result._meta as Record<string, unknown> | undefined;
          if (typeof meta?.['io.idem/execution-id'] !== 'string' || meta['io.idem/replayed'] === true)
            throw new Error(`not a new execution: ${JSON.stringify(result).slice(0, 200)}`);
          return result;
        },
      }),
    ),
  );
  const firstError = loads.find((l) => l.firstError)?.firstError;
  return {
    samples: loads.flatMap((l) => l.samples),
    seconds: (performance.now() - start) / 1000,
    errors: loads.reduce((sum, l) => sum + l.errors, 0),
    ...(firstError ? { firstError } : {}),
    cut: loads.some((l) => l.cut),
  };
}

export async function benchFleet(options: {
  calls: number;
  gateways: number[];
  /** Calls in flight over the whole fleet (default 32). */
  inFlight?: number;
  /** Client sessions (default 4, at least one per gateway, a multiple of the fleet size). */
  clients?: number;
  /** PostgreSQL server URL; default IDEM_PG_URL, else a throwaway server (fsync on). */
  url?: string;
  /** Time budget of one fleet (all its rounds), ms; default 120 s. */
  budgetMs?: number;
}): Promise<string[]> {
  const inFlight = options.inFlight ?? 32;
  const budgetMs = options.budgetMs ?? Number(process.env.BENCH_FLEET_BUDGET_MS ?? 120_000);
  const given = options.url ?? process.env[PG_URL_VARIABLE];
  let server: Awaited<ReturnType<typeof startThrowawayPostgres>> | undefined;
  try {
    server = given ? undefined : await startThrowawayPostgres({ durable: true });
  } catch (error) {
    return [`unavailable: no PostgreSQL (${reason(error)})`];
  }
  const url = given ?? (server?.url as string);
  const work = mkdtempSync(join(tmpdir(), 'idem-bench-fleet-'));
  const keyFile = join(work, 'fingerprint.key');
  const tag = randomBytes(3).toString('hex');
  const admin = new pg.Client({ connectionString: url });
  const fleets: Fleet[] = options.gateways.map((size) => ({
    size,
    schema: `idem_fleet_${tag}_${size}`,
    gateways: [],
    clients: [],
    loads: [],
    issued: 0,
    probe: { lockWaiters: 0, samples: 0, gatewayTicks: 0, busyTicks: 0, totalTicks: 0 },
  }));
  const lines: string[] = [];
  try {
    await admin.connect();
    const settings = await admin.query<{ version: string; fsync: string; sync: string }>(
      `SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync,
        current_setting('synchronous_commit') AS sync`,
    );
    const { version, fsync, sync } = settings.rows[0]!;
    // Fleets one after the other at start: several gateways migrating one fresh schema at once is
    // supported (an advisory lock), but starting seven processes at once would only be slow.
    for (const fleet of fleets) {
      try {
        fleet.gateways = await startFleet({ size: fleet.size, url, work, keyFile, schema: fleet.schema });
        const sessions = Math.ceil(Math.max(options.clients ?? 4, fleet.size) / fleet.size) * fleet.size;
        const shares = split(inFlight, sessions);
        for (let c = 0; c < sessions; c++) {
          const gateway = fleet.gateways[c % fleet.size] as ServerProcess;
          fleet.clients.push({ client: await connectClient(gateway.url), inFlight: shares[c] as number });
        }
        const warm = await runFleet(
          fleet,
          Math.min(1_000, Math.max(100, Math.floor(options.calls / 5))),
          budgetMs,
          `warm-${tag}`,
        );
        if (warm.errors > 0) throw new Error(`warm-up: ${warm.errors} errors: ${warm.firstError}`);
      } catch (error) {
        fleet.unavailable = reason(error);
      }
    }
    const ready = fleets.filter((f) => !f.unavailable);
    const perRound = Math.ceil(options.calls / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      const order = [...ready];
      for (let k = 0; k < round; k++) order.push(order.shift() as Fleet);
      for (const fleet of order) {
        const load = await probed(fleet, admin, () =>
          runFleet(fleet, perRound, budgetMs / ROUNDS, `r${round}-${tag}`),
        );
        fleet.loads.push(load);
      }
    }
    const one = fleets.find((f) => f.size === 1 && !f.unavailable);
    const base = one ? summarize(one.loads).perSecond : Number.NaN;
    lines.push(
      `PostgreSQL ${version} (fsync=${fsync}, synchronous_commit=${sync}) on the same machine; ` +
        `${options.calls.toLocaleString('en')} calls per fleet in ${ROUNDS} rounds, fleets alternating; ` +
        `${inFlight} calls in flight in total, over the client sessions spread evenly across the fleet's gateways; ` +
        'every call a new execution (claimed, dispatched, completed, delivered, 5 journal events).',
      '',
      '| gateways | client sessions × in flight | calls | p50 µs | p99 µs | calls/s | calls/s ÷ 1 gateway | backends waiting for a lock (mean) | gateway CPU per call, µs (all gateways) | machine CPU busy |',
      '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const fleet of fleets) {
      if (fleet.unavailable) {
        lines.push(`| ${fleet.size} | unavailable: ${fleet.unavailable} | | | | | | | | |`);
        continue;
      }
      const s = summarize(fleet.loads);
      const p = fleet.probe;
      const notes = [
        s.errors > 0 ? `${s.errors} errors (${reason(s.firstError)})` : '',
        s.cut ? 'time budget ran out' : '',
      ]
        .filter(Boolean)
        .join('; ');
      const shape = fleet.clients.map((c) => c.inFlight);
      const sessions = shape.every((n) => n === shape[0])
        ? `${shape.length} × ${shape[0]}`
        : shape.join(' + ');
      lines.push(
        `| ${fleet.size} | ${sessions} | ${s.calls.toLocaleString('en')}${notes ? ` (${notes})` : ''} | ${us(s.p50)} | ${us(s.p99)} | ${perSec(s.perSecond)} | ${ratio(s.perSecond / base)} | ` +
          `${p.samples ? (p.lockWaiters / p.samples).toFixed(1) : '–'} | ${p.gatewayTicks ? us((p.gatewayTicks / TICKS_PER_SECOND / s.calls) * 1e6) : '–'} | ` +
          `${p.totalTicks ? `${((100 * p.busyTicks) / p.totalTicks).toFixed(0)}%` : '–'} |`,
      );
    }
    const counts: string[] = [];
    for (const fleet of fleets.filter((f) => !f.unavailable)) {
      const { rows } = await admin.query<{ n: string; journal: string }>(
        `SELECT (SELECT count(*) FROM ${fleet.schema}.executions) AS n,
          (SELECT count(*) FROM ${fleet.schema}.activity_journal) AS journal`,
      );
      counts.push(
        `${fleet.size} gateway${fleet.size > 1 ? 's' : ''}: ${Number(rows[0]?.n).toLocaleString('en')} executions, ` +
          `${Number(rows[0]?.journal).toLocaleString('en')} journal rows for ${fleet.issued.toLocaleString('en')} calls`,
      );
    }
    lines.push('', `In the database after the run — ${counts.join('; ')}.`);
    return lines;
  } finally {
    for (const fleet of fleets) {
      for (const { client } of fleet.clients) await client.close().catch(() => {});
      for (const gateway of fleet.gateways) await gateway.stop().catch(() => {});
    }
    for (const fleet of fleets)
      await admin.query(`DROP SCHEMA IF EXISTS ${fleet.schema} CASCADE`).catch(() => {});
    await admin.end().catch(() => {});
    await server?.dispose();
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const calls = Number(process.env.BENCH_CALLS ?? 5_000);
  for (const line of await benchFleet({ calls, gateways: [1, 2, 4] })) console.log(line);
}
