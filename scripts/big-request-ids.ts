/**
 * npx tsx scripts/big-request-ids.ts [--calls 100] [--id-kib 1024]
 *
 * Issue 44 item 3 at full count: `idem gateway` (its own process, the CLI from
 * dist/) on loopback HTTP in front of the counting upstream; one session sends
 * `--calls` effectful calls, each with a request id of `--id-kib` KiB. Prints
 * how much the store (idem.db and its WAL) grew, the gateway's resident memory
 * before and after, and tried / survived / lost / duplicated / hung as counted
 * at the upstream (every call must run once and be answered). Exits 1 if a
 * call was not answered, ran other than once, or the gateway died.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { executionsOf } from '../test/gateway/fixtures/counting-server.js';
import { countingUpstream } from '../test/support/counting-upstream.js';
import { rssOf } from '../test/support/http-gateway.js';
import { IDEM_CLI } from '../test/support/idem-cli.js';
import { RawMcpHttp } from '../test/support/raw-mcp-http.js';

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '100' }, 'id-kib': { type: 'string', default: '1024' } },
});
const calls = Number(values.calls);
const idChars = Number(values['id-kib']) * 1024;
const dir = mkdtempSync(join(tmpdir(), 'idem-big-ids-'));
const counts = join(dir, 'counts');
mkdirSync(counts);
const config = join(dir, 'idem.json');
writeFileSync(config, JSON.stringify({ data_dir: dir, upstreams: { counter: countingUpstream(counts) } }));
const child = spawn(process.execPath, [IDEM_CLI, 'gateway', '--config', config, '--listen', '127.0.0.1:0'], {
  stdio: ['ignore', 'ignore', 'pipe'],
});
const MIB = 1024 * 1024;
const storeBytes = () =>
  ['idem.db', 'idem.db-wal'].reduce(
    (n, f) => n + (existsSync(join(dir, f)) ? statSync(join(dir, f)).size : 0),
    0,
  );
try {
  const url = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /Streamable HTTP on (http:\S+)/.exec(stderr);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}:\n${stderr}`)));
  });
  const raw = new RawMcpHttp(url);
  await raw.initialize('big-ids');
  // One ordinary call first: the upstream started, the store opened, before anything is measured.
  await raw.callTool('warm-up', 'count', { key: 'warm-up' });
  const pid = child.pid as number;
  const [storeBefore, rssBefore] = [storeBytes(), await rssOf(pid)];
  let answered = 0;
  let hung = 0;
  for (let i = 0; i < calls; i++) {
    const id = `${String(i).padStart(8, '0')}${'i'.repeat(idChars - 8)}`;
    const reply = await Promise.race([
      raw.callTool(id, 'count', { key: `big-${i}` }),
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 30_000).unref()),
    ]);
    if (reply === undefined) hung++;
    else if ((reply.result as { isError?: boolean } | undefined)?.isError !== true && reply.result)
      answered++;
  }
  const [storeAfter, rssAfter] = [storeBytes(), await rssOf(pid)];
  const ran = Array.from({ length: calls }, (_, i) => executionsOf(counts, `big-${i}`));
  const lost = ran.filter((n) => n === 0).length;
  const duplicated = ran.filter((n) => n > 1).length;
  const alive = child.exitCode === null;
  process.stdout.write(
    `${[
      `calls: ${calls} with ${values['id-kib']} KiB ids; answered ${answered}, lost ${lost}, duplicated ${duplicated}, hung ${hung}; gateway alive: ${alive}`,
      `store (idem.db + WAL): ${(storeBefore / MIB).toFixed(1)} MiB -> ${(storeAfter / MIB).toFixed(1)} MiB (+${((storeAfter - storeBefore) / MIB).toFixed(1)} MiB)`,
      `gateway RSS: ${(rssBefore / MIB).toFixed(0)} MiB -> ${(rssAfter / MIB).toFixed(0)} MiB`,
      `journal rows' widest request ref: ${widestRef(dir)} characters`,
    ].join('\n')}\n`,
  );
  process.exitCode = answered === calls && lost + duplicated + hung === 0 && alive ? 0 : 1;
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(null)));
  rmSync(dir, { recursive: true, force: true });
}

/** The longest request_ref in the activity journal, read beside the running gateway (WAL). */
function widestRef(dataDir: string): number {
  const db = new Database(join(dataDir, 'idem.db'), { readonly: true });
  try {
    // A row of several events (ADR 0052) keeps each event's request ref inside its detail.
    return db
      .prepare(
        `SELECT max(n) FROM (SELECT max(length(request_ref)) AS n FROM activity_journal
           UNION ALL SELECT max(length(e.value ->> 4)) FROM activity_journal j, json_each(j.detail) e
           WHERE j.events IS NOT NULL)`,
      )
      .pluck()
      .get() as number;
  } finally {
    db.close();
  }
}
