/**
 * npx tsx scripts/reliability-fuzz.ts [--count 5000] [--seed 8] [--timeout-ms 10000]
 *
 * The HTTP front's reliability fuzz at full count (test/gateway/http-fuzz.test.ts
 * runs it small): a gateway process (the CLI, SQLite store, the counting
 * upstream) on a free loopback port, then generated messages one at a time,
 * with requests the transport refuses followed by a resend of the same id.
 * Prints tried / answered / hung / crashed and exits non-zero if anything
 * hung, crashed or got a 5xx.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fuzzHttpFront } from '../test/gateway/http-fuzz.js';
import { countingUpstream } from '../test/support/counting-upstream.js';
import { startGatewayProcess } from '../test/support/gateway-process.js';
import { rssOf } from '../test/support/http-gateway.js';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '5000' },
    seed: { type: 'string', default: '8' },
    'timeout-ms': { type: 'string', default: '10000' },
  },
});

const dir = mkdtempSync(join(tmpdir(), 'idem-reliability-fuzz-'));
const gateway = await startGatewayProcess(
  { data_dir: join(dir, 'data'), upstreams: { counter: countingUpstream(dir) } },
  join(dir, 'idem.json'),
);
try {
  const pid = gateway.child.pid as number;
  const rssBefore = await rssOf(pid);
  const tally = await fuzzHttpFront({
    url: gateway.url,
    count: Number(values.count),
    seed: Number(values.seed),
    timeoutMs: Number(values['timeout-ms']),
    child: gateway.child,
  });
  const rssAfter = tally.crashed === 0 ? await rssOf(pid) : Number.NaN;
  const { problems, ...figures } = tally;
  process.stdout.write(
    `${JSON.stringify({ ...figures, rssMiB: [rssBefore, rssAfter].map((b) => Math.round(b / 2 ** 20)) })}\n`,
  );
  for (const problem of problems) process.stdout.write(`  ${problem}\n`);
  process.exitCode = tally.hung + tally.crashed + tally.serverErrors === 0 ? 0 : 1;
} finally {
  await gateway.kill();
  rmSync(dir, { recursive: true, force: true });
}
