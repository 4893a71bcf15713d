/**
 * npx tsx scripts/reliability-store-truncate.ts [--rounds 5] [--cli dist/cli/main.js]
 *
 * Issue 44 item 6 at full count: `idem gateway` (its own process, HTTP front, SQLite store) makes
 * 20 calls; then its idem.db is truncated to half, truncated to 0 bytes, deleted, or replaced by
 * another (valid, empty) store, while it runs. Then, per change and round: whether /readyz went
 * down within 3 s with no call made, and what 5 more calls got — IDEM_NOT_EXECUTED with nothing
 * run (failed closed) or their result (answered OK while what they record goes where the process
 * cannot find it again). `--cli` runs another build (e.g. main's). Exits 1 if any call was
 * answered OK after a change, or readiness stayed up.
 */
import { renameSync, rmSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { idemCodeOf } from '../src/executions/answers.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { executionsOf } from '../test/gateway/fixtures/counting-server.js';
import { countingUpstream } from '../test/support/counting-upstream.js';
import { builtCli } from '../test/support/dist.js';
import { mcpClient, startGatewayProcess } from '../test/support/gateway-process.js';
import { freshDir, removeTemporaries } from '../test/support/temp-dirs.js';
import { sleep } from '../test/support/wait.js';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, cli: { type: 'string' } },
});
const rounds = Number(values.rounds);
const cli = values.cli ?? builtCli();

const changes: Record<string, (db: string) => void | Promise<void>> = {
  'truncated to half': (db) => truncateSync(db, Math.floor(statSync(db).size / 2)),
  'truncated to 0 bytes': (db) => truncateSync(db, 0),
  deleted: (db) => rmSync(db),
  'replaced by another store': async (db) => {
    await (await SqliteStore.open({ path: `${db}.other` })).close();
    renameSync(`${db}.other`, db);
  },
};

const rows: string[] = [];
let failedOpen = 0;
const started = Date.now();
try {
  for (const [what, change] of Object.entries(changes)) {
    const tally = { tried: 0, refused: 0, answeredOk: 0, ranAtUpstream: 0, readinessDown: 0, other: 0 };
    for (let round = 0; round < rounds; round++) {
      const dataDir = freshDir('truncate');
      const counts = freshDir('truncate-counts');
      const gateway = await startGatewayProcess(
        { data_dir: dataDir, upstreams: { counter: countingUpstream(counts) } },
        join(dataDir, 'idem.json'),
        { cli },
      );
      const client = await mcpClient(gateway.url, 'truncate-agent');
      const count = (key: string) =>
        client.callTool({ name: 'count', arguments: { key } }) as Promise<CallToolResult>;
      for (let i = 0; i < 20; i++) await count(`before-${i}`);
      await change(join(dataDir, 'idem.db'));
      // With no call made, readiness should say so within a few seconds (probed, not slept on).
      const deadline = Date.now() + 3_000;
      let down = false;
      while (!down && Date.now() < deadline) {
        down = (await fetch(new URL('/readyz', gateway.url))).status === 503;
        if (!down) await sleep(100);
      }
      if (down) tally.readinessDown++;
      for (let i = 0; i < 5; i++) {
        const key = `after-${round}-${i}`;
        const answer = await count(key).catch(() => undefined);
        tally.tried++;
        if (answer && idemCodeOf(answer) === 'IDEM_NOT_EXECUTED') tally.refused++;
        else if (answer && !answer.isError) tally.answeredOk++;
        else tally.other++;
        if (executionsOf(counts, key) > 0) tally.ranAtUpstream++;
      }
      await client.close().catch(() => {});
      await gateway.kill('SIGKILL');
    }
    if (tally.answeredOk > 0 || tally.readinessDown < rounds) failedOpen++;
    rows.push(
      `| ${what} | ${rounds} | ${tally.readinessDown} | ${tally.tried} | ${tally.refused} | ${tally.answeredOk} | ${tally.ranAtUpstream} | ${tally.other} |`,
    );
    process.stderr.write(`${what}: ${JSON.stringify(tally)}\n`);
  }
} finally {
  removeTemporaries();
}
process.stdout.write(
  `${[
    `cli: ${cli}; took ${((Date.now() - started) / 1000).toFixed(1)} s`,
    '| change under the running gateway | rounds | /readyz 503 within 3 s | calls after | IDEM_NOT_EXECUTED | answered OK | ran at the upstream | other |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n')}\n`,
);
process.exitCode = failedOpen === 0 ? 0 : 1;
