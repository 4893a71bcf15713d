/**
 * npx tsx scripts/task-races.ts [--rounds 20] [--generation v1|v2|both]
 *
 * The races an operator or a client causes on a task (test/support/task-races.ts: cancel vs
 * answer, approve vs cancel, cancel vs input), each for `--rounds` rounds through `idem gateway`
 * as its own process, in front of a plain upstream of each SDK generation
 * (test/conformance/tasks-upstream-v1.ts, tasks-upstream.ts), with a 2026-07-28 client. Then
 * `idem audit verify` on the store. Prints one JSON line per race and generation (rounds; how the
 * executions ended: the target's answer stored, unknown, not executed; violations) and one for
 * verify; exits 1 on any violation or a verify that does not pass. The test runs the same at a
 * small count (test/gateway/tasks-plain-upstreams.test.ts).
 */
import { parseArgs } from 'node:util';
import { builtCli } from '../test/support/dist.js';
import { GENERATIONS, type Generation, startPlainTasksGateway } from '../test/support/plain-tasks.js';
import { RACES, runRace } from '../test/support/task-races.js';
import { removeTemporaries } from '../test/support/temp-dirs.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    generation: { type: 'string', default: 'both' },
  },
});
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds ${values.rounds}: a whole number ≥ 1`);
const generations: readonly Generation[] =
  values.generation === 'both' ? GENERATIONS : GENERATIONS.filter((g) => g === values.generation);
if (generations.length === 0) throw new Error(`--generation ${values.generation}: v1, v2 or both`);

// The gateway process runs dist/: compiled first when src/ is newer.
builtCli();
let failed = false;
try {
  for (const generation of generations) {
    const gateway = await startPlainTasksGateway(generation);
    try {
      for (const race of RACES) {
        const started = Date.now();
        const tally = await runRace(gateway, race, rounds);
        console.log(JSON.stringify({ generation, race, ...tally, ms: Date.now() - started }));
        failed ||= tally.violations.length > 0;
      }
      const verified = await gateway.verify();
      const summary = verified.stdout.trim().split('\n');
      console.log(JSON.stringify({ generation, verify: verified.code === 0 ? 'OK' : 'FAILED', summary }));
      failed ||= verified.code !== 0;
    } finally {
      await gateway.close();
    }
  }
} finally {
  removeTemporaries();
}
process.exitCode = failed ? 1 : 0;
