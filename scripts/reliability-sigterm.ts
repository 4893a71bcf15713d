/**
 * npx tsx scripts/reliability-sigterm.ts [--rounds 20] [--calls 5] [--hold-ms 1500] [--cli dist/cli/main.js]
 *
 * Issue 44 item 4 at full count: a rolling restart. Each round starts `idem gateway` (its own
 * process, HTTP front) on one data directory, puts `--calls` calls at the counting upstream (each
 * counted, then held), sends SIGTERM, tries one new session (and a call in it), lets the upstream
 * answer `--hold-ms` after the signal, and waits for the gateway to exit. Then it asks each call again through the next round's
 * gateway. Counted: calls answered with their result; recorded completed (and delivered); left
 * `unknown` (or `dispatched`); cut (the caller's request ended without an answer); a retry that
 * needed an operator (IDEM_REVIEW_REQUIRED); duplicated
 * (run twice at the upstream); hung (no answer within 60 s); new calls refused (503) and run; exit
 * codes. `--cli` runs another build (e.g. one of main's, to compare). Exits 1 if anything was
 * lost, duplicated, hung or left for an operator.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { idemCodeOf } from '../src/executions/answers.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { executionsOf } from '../test/gateway/fixtures/counting-server.js';
import { countingUpstream } from '../test/support/counting-upstream.js';
import { builtCli } from '../test/support/dist.js';
import { mcpClient, startGatewayProcess } from '../test/support/gateway-process.js';
import { freshDir, removeTemporaries } from '../test/support/temp-dirs.js';
import { sleep, waitUntil } from '../test/support/wait.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    calls: { type: 'string', default: '5' },
    'hold-ms': { type: 'string', default: '1500' },
    cli: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const calls = Number(values.calls);
const holdMs = Number(values['hold-ms']);
const cli = values.cli ?? builtCli();
const dataDir = freshDir('sigterm-rounds');
const counts = freshDir('sigterm-rounds-counts');
const config = { data_dir: dataDir, upstreams: { counter: countingUpstream(counts) } };
const HUNG_MS = 60_000;

const tally = {
  tried: 0,
  answered: 0,
  /** The caller's request ended without an answer (the connection closed under it). */
  cut: 0,
  completed: 0,
  unknown: 0,
  reviewRequired: 0,
  duplicated: 0,
  hung: 0,
  newRefused: 0,
  newRan: 0,
  retries: new Map<string, number>(),
  exits: new Map<string, number>(),
  wallMs: [] as number[],
};

const within = <T>(work: Promise<T>, ms: number): Promise<T | 'hung'> =>
  Promise.race([work, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), ms).unref())]);

const count = (client: Client, key: string, hold?: string) =>
  client.callTool({ name: 'count', arguments: { key, ...(hold ? { hold_file: hold } : {}) } }, undefined, {
    timeout: HUNG_MS,
  }) as Promise<CallToolResult>;

let previous: { keys: string[]; hold: string } | undefined;
const allKeys: string[] = [];
const started = Date.now();
try {
  for (let round = 0; round < rounds; round++) {
    const gateway = await startGatewayProcess(config, join(dataDir, 'idem.json'), { cli });
    let exitedAt = 0;
    const exited = new Promise<string>((resolve) =>
      gateway.child.once('exit', (code, signal) => {
        exitedAt = performance.now();
        resolve(String(code ?? signal));
      }),
    );
    const client = await mcpClient(gateway.url, 'rolling-agent');
    // The previous round's calls asked again through this gateway: a retry must never need an operator.
    if (previous)
      for (const key of previous.keys) {
        // The same call again (its hold file exists by now: it answers at once).
        const retry = await within(count(client, key, previous.hold), HUNG_MS).catch(() => 'cut' as const);
        if (retry === 'hung') tally.hung++;
        else if (retry === 'cut') tally.cut++;
        else {
          const code = idemCodeOf(retry) ?? (retry._meta?.['io.idem/replayed'] ? 'the stored result' : 'ran');
          tally.retries.set(code, (tally.retries.get(code) ?? 0) + 1);
          if (code === 'IDEM_REVIEW_REQUIRED') tally.reviewRequired++;
        }
      }
    const keys = Array.from({ length: calls }, (_, i) => `r${round}-c${i}`);
    const hold = `hold-${round}`;
    const inFlight = keys.map((key) => within(count(client, key, hold), HUNG_MS).catch(() => 'cut' as const));
    tally.tried += calls;
    await waitUntil('every call at the upstream', () => keys.every((k) => executionsOf(counts, k) === 1));
    const signalled = performance.now();
    gateway.child.kill('SIGTERM');
    // A new call now: refused before anything runs (or, without a drain, the process is gone).
    const late = `r${round}-new`;
    const fresh = await within(mcpClient(gateway.url, 'late-agent'), 10_000).catch(() => undefined);
    if (!fresh || fresh === 'hung') tally.newRefused++;
    else {
      const answer = await within(count(fresh, late), 10_000).catch(() => undefined);
      if (answer && answer !== 'hung' && !idemCodeOf(answer)) tally.newRan++;
      else tally.newRefused++;
      await fresh.close().catch(() => {});
    }
    // The upstream finishes its work `--hold-ms` after the signal, as a slow tool would.
    await sleep(Math.max(0, holdMs - (performance.now() - signalled)));
    writeFileSync(join(counts, hold), '');
    const answers = await Promise.all(inFlight);
    for (const a of answers) {
      if (a === 'hung') tally.hung++;
      else if (a === 'cut') tally.cut++;
      else if (!a.isError && !idemCodeOf(a)) tally.answered++;
    }
    const code = await within(exited, HUNG_MS);
    tally.exits.set(String(code), (tally.exits.get(String(code)) ?? 0) + 1);
    tally.wallMs.push((exitedAt || performance.now()) - signalled);
    await client.close().catch(() => {});
    if (code === 'hung') await gateway.kill('SIGKILL');
    // What the store holds of this round's calls, the gateway gone.
    const store = await SqliteStore.open({ path: join(dataDir, 'idem.db') });
    for (const key of keys) {
      const [record] = await store
        .list({ tool: 'count', limit: 1000 })
        .then((all) => all.filter((r) => r.argumentsPreview.includes(`"${key}"`)));
      if (record?.state === 'completed' && record.deliveredAt) tally.completed++;
      else if (record && ['unknown', 'dispatched'].includes(record.state)) tally.unknown++;
    }
    await store.close();
    allKeys.push(...keys, late);
    previous = { keys, hold };
    process.stderr.write(
      `round ${round + 1}/${rounds}: exit ${code}, ${(tally.wallMs.at(-1) ?? 0).toFixed(0)} ms from SIGTERM to exit\n`,
    );
  }
  // Counted at the end: the retries of the last rounds ran after each round's own count.
  tally.duplicated = allKeys.filter((key) => executionsOf(counts, key) > 1).length;
} finally {
  removeTemporaries();
}
const median = [...tally.wallMs].sort((a, b) => a - b)[Math.floor(tally.wallMs.length / 2)] ?? 0;
process.stdout.write(
  `${[
    `rounds: ${rounds} (SIGTERM with ${calls} calls held at the upstream), cli: ${cli}`,
    `calls tried: ${tally.tried}; answered with their result: ${tally.answered}; cut without an answer: ${tally.cut}; recorded completed and delivered: ${tally.completed}`,
    `left unknown or dispatched: ${tally.unknown}; retries through the next gateway: ${[...tally.retries].map(([c, n]) => `${c} ${n}`).join(', ') || 'none'}`,
    `duplicated: ${tally.duplicated}; hung: ${tally.hung}`,
    `new calls after SIGTERM refused: ${tally.newRefused}, run: ${tally.newRan}`,
    `exit codes: ${[...tally.exits].map(([c, n]) => `${c} × ${n}`).join(', ')}; SIGTERM to exit, median: ${median.toFixed(0)} ms`,
    `took ${((Date.now() - started) / 1000).toFixed(1)} s`,
  ].join('\n')}\n`,
);
const clean =
  tally.answered === tally.tried &&
  tally.completed === tally.tried &&
  tally.cut + tally.unknown + tally.reviewRequired + tally.duplicated + tally.hung + tally.newRan === 0;
process.exitCode = clean ? 0 : 1;
