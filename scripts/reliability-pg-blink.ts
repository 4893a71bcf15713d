/**
 * npx tsx scripts/reliability-pg-blink.ts [--rounds 10] [--calls 3] [--cli dist/cli/main.js]
 *
 * Issue 44 item 5 at full count: two `idem gateway` processes (A and B) on one throwaway
 * PostgreSQL, leases of 2 s. Each round puts `--calls` calls at the counting upstream through A
 * (each counted, then held), stops PostgreSQL, lets the upstream answer, starts PostgreSQL again,
 * and asks each call again — through A at once, then through B; at the end, once every lease ran
 * out, through B once more. Counted: calls answered with their result while the database was
 * down; retries answered with the stored result, and those that got IDEM_REVIEW_REQUIRED (an
 * operator needed); executions recorded completed at the end;
 * duplicated (run twice at the upstream); hung. `--cli` runs another build (e.g. main's). Exits 1
 * if anything was duplicated or hung, or a retry needed an operator.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { idemCodeOf, META } from '../src/executions/answers.js';
import { executionsOf, readStarts } from '../test/gateway/fixtures/counting-server.js';
import { countingUpstream } from '../test/support/counting-upstream.js';
import { builtCli } from '../test/support/dist.js';
import { type GatewayProcess, mcpClient, startGatewayProcess } from '../test/support/gateway-process.js';
import { postgresForTests } from '../test/support/postgres.js';
import { fleetMemberConfig } from '../test/support/postgres-fleet.js';
import { freshDir, removeTemporaries } from '../test/support/temp-dirs.js';
import { sleep, waitUntil } from '../test/support/wait.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '10' },
    calls: { type: 'string', default: '3' },
    cli: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const calls = Number(values.calls);
const cli = values.cli ?? builtCli();
const work = freshDir('pg-blink');
const counts = join(work, 'counts');
mkdirSync(counts);
const HUNG_MS = 60_000;

const pg = await postgresForTests();
const server = pg.server;
if (!server) throw new Error('this script stops the throwaway server; unset IDEM_PG_URL');

async function gateway(name: string): Promise<{ gateway: GatewayProcess; client: Client }> {
  const started = await startGatewayProcess(
    fleetMemberConfig(
      { work, name, url: pg.url },
      {
        upstreams: { counter: countingUpstream(counts) },
        tools: { count: { replay: 'review', lease: '2s', timeout: '90s' } },
      },
    ),
    join(work, `${name}.json`),
    { cli },
  );
  return { gateway: started, client: await mcpClient(started.url, 'blink-agent') };
}

const within = <T>(work: Promise<T>): Promise<T | 'hung'> =>
  Promise.race([work, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), HUNG_MS).unref())]);
const count = (client: Client, key: string, hold?: string) =>
  within(
    client.callTool({ name: 'count', arguments: { key, ...(hold ? { hold_file: hold } : {}) } }, undefined, {
      timeout: HUNG_MS,
    }) as Promise<CallToolResult>,
  ).catch(() => 'hung' as const);

const tally = {
  tried: 0,
  answeredDown: 0,
  retries: 0,
  replayed: 0,
  reviewRequired: 0,
  otherAnswers: new Map<string, number>(),
  completed: 0,
  duplicated: 0,
  hung: 0,
};
const a = await gateway('gw-a');
const b = await gateway('gw-b');
const started = Date.now();
const allKeys: string[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    const keys = Array.from({ length: calls }, (_, i) => `blink-${round}-${i}`);
    allKeys.push(...keys);
    const hold = `hold-${round}`;
    const pending = keys.map((key) => count(a.client, key, hold));
    tally.tried += calls;
    await waitUntil('every call at the upstream', () => keys.every((k) => executionsOf(counts, k) === 1));
    await server.stop('fast');
    writeFileSync(join(counts, hold), '');
    for (const answer of await Promise.all(pending)) {
      if (answer === 'hung') tally.hung++;
      else if (!answer.isError && !idemCodeOf(answer)) tally.answeredDown++;
    }
    await server.start();
    for (const { client } of [a, b])
      for (const key of keys) {
        // The same call again (its hold file exists by now: it answers at once).
        const retry = await count(client, key, hold);
        tally.retries++;
        if (retry === 'hung') tally.hung++;
        else if (retry._meta?.[META.replayed] === true) tally.replayed++;
        else {
          const code = idemCodeOf(retry) ?? 'ran again';
          if (code === 'IDEM_REVIEW_REQUIRED') tally.reviewRequired++;
          else tally.otherAnswers.set(code, (tally.otherAnswers.get(code) ?? 0) + 1);
        }
      }
    process.stderr.write(
      `round ${round + 1}/${rounds}: replayed ${tally.replayed}, review ${tally.reviewRequired} of ${tally.retries}\n`,
    );
  }
  // Once every lease has run out (2 s), each call asked once more through B: what a retry gets
  // when nothing of the first gateway is alive to vouch for it any more.
  await sleep(3_000);
  const later = new Map<string, number>();
  for (const [i, key] of allKeys.entries()) {
    const retry = await count(b.client, key, `hold-${Math.floor(i / calls)}`);
    const code =
      retry === 'hung'
        ? 'hung'
        : retry._meta?.[META.replayed] === true
          ? 'the stored result'
          : (idemCodeOf(retry) ?? 'ran again');
    later.set(code, (later.get(code) ?? 0) + 1);
    if (code === 'IDEM_REVIEW_REQUIRED') tally.reviewRequired++;
    if (code === 'hung') tally.hung++;
  }
  const { rows } = await pg
    .admin()
    .query<{ state: string; n: string }>('SELECT state, count(*) AS n FROM executions GROUP BY state');
  tally.completed = Number(rows.find((r) => r.state === 'completed')?.n ?? 0);
  tally.duplicated = allKeys.filter((k) => executionsOf(counts, k) > 1).length;
  process.stdout.write(
    `${[
      `rounds: ${rounds} (PostgreSQL stopped with ${calls} calls held at the upstream), cli: ${cli}`,
      `calls tried: ${tally.tried}; answered with their result while the database was down: ${tally.answeredDown}`,
      `retries (through the same gateway, then another): ${tally.retries}; the stored result: ${tally.replayed}; IDEM_REVIEW_REQUIRED: ${tally.reviewRequired}${[...tally.otherAnswers].map(([c, n]) => `; ${c}: ${n}`).join('')}`,
      `each asked again through B once every lease ran out: ${[...later].map(([c, n]) => `${c} ${n}`).join(', ')}`,
      `executions by state at the end: ${rows.map((r) => `${r.state} ${r.n}`).join(', ')}`,
      `duplicated: ${tally.duplicated}; hung: ${tally.hung}`,
      `took ${((Date.now() - started) / 1000).toFixed(1)} s`,
    ].join('\n')}\n`,
  );
  process.exitCode = tally.duplicated + tally.hung + tally.reviewRequired === 0 ? 0 : 1;
} finally {
  for (const { client, gateway: g } of [a, b]) {
    await client.close().catch(() => {});
    await g.kill('SIGKILL');
  }
  for (const pid of readStarts(counts)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await pg.dispose();
  removeTemporaries();
}
