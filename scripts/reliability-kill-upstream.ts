/**
 * npx tsx scripts/reliability-kill-upstream.ts [--rounds 30] [--calls 6] [--payload-kib 256]
 *
 * Issue 8 item 1 at full count: `idem gateway` (its own process) in front of
 * the counting upstream over stdio; each round sends a burst of concurrent
 * calls with large arguments and kills the upstream with SIGKILL while they
 * are being written. Prints tried / survived / lost / duplicated / hung as
 * counted at the upstream; exits 1 if any call was lost, duplicated or hung,
 * the gateway died, an unhandled rejection was reported, or an execution was
 * left `dispatched`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runKillUpstreamLoop } from '../test/gateway/kill-upstream-loop.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '30' },
    calls: { type: 'string', default: '6' },
    'payload-kib': { type: 'string', default: '256' },
  },
});
const rounds = Number(values.rounds);
const dir = mkdtempSync(join(tmpdir(), 'idem-kill-upstream-'));
const started = Date.now();
try {
  const tally = await runKillUpstreamLoop({
    dir,
    rounds,
    callsPerRound: Number(values.calls),
    payloadBytes: Number(values['payload-kib']) * 1024,
    onRound: (round, t) =>
      process.stderr.write(
        `round ${round + 1}/${rounds}: tried ${t.tried} done ${t.done} not_executed ${t.notExecuted} unknown ${t.unknown} lost ${t.lost} duplicated ${t.duplicated} hung ${t.hung}\n`,
      ),
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    `${[
      `kills: ${rounds}, survived: ${tally.survived}, gateway alive at the end: ${tally.gatewayAlive}`,
      `calls tried: ${tally.tried} (done ${tally.done}, IDEM_NOT_EXECUTED ${tally.notExecuted}, IDEM_OUTCOME_UNKNOWN ${tally.unknown})`,
      `lost: ${tally.lost}, duplicated: ${tally.duplicated}, hung: ${tally.hung}, left dispatched: ${tally.leftDispatched}`,
      `unhandled on stderr: ${tally.unhandled.length}`,
      ...tally.problems.map((p) => `  ${p}`),
      `took ${seconds} s`,
    ].join('\n')}\n`,
  );
  const clean =
    tally.survived === rounds &&
    tally.gatewayAlive &&
    tally.lost + tally.duplicated + tally.hung + tally.leftDispatched + tally.unhandled.length === 0;
  process.exitCode = clean ? 0 : 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
