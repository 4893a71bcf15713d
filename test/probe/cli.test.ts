/**
 * `idem probe` as a CI job runs it (issue 48): the compiled CLI in its own
 * process, `--json` on stdout, exit 0 when the totals meet `--expect`, 1 when
 * not, 2 when the command line is wrong. The target is the fast known-bad (the
 * SDK pass-through) on one scenario: one duplicate.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Scorecard } from '../../src/probe/index.js';
import { PASS_THROUGH_VIA } from '../support/probe-vias.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

afterAll(removeTemporaries);

const probe = (...args: string[]) =>
  runIdem(['probe', ...args], { dataDir: freshDir('probe-cli'), timeoutMs: 120_000 });

describe('idem probe (the CLI)', () => {
  it('--json prints the scorecard; exit 1 when a total is over --expect, 0 when it meets it', async () => {
    const [strict, lenient] = await Promise.all([
      probe('--json', '--scenario', 'resend', '--via', PASS_THROUGH_VIA),
      probe('--json', '--scenario', 'resend', '--expect', 'duplicates=1', '--via', PASS_THROUGH_VIA),
    ]);
    expect(strict.code, strict.stderr).toBe(1);
    expect(lenient.code, lenient.stderr).toBe(0);
    for (const run of [strict, lenient]) {
      const card = JSON.parse(run.stdout) as Scorecard;
      expect(card).toMatchObject({
        target: PASS_THROUGH_VIA,
        mode: 'gateway',
        duplicates: 1,
        falseAnswers: 0,
        scenarios: [
          {
            id: 'resend',
            name: expect.stringContaining('same id'),
            expectedEffects: 1,
            countedEffects: 2,
            answer: 'done',
          },
        ],
      });
      expect(card.scenarios).toHaveLength(1);
    }
  });

  it('the scorecard as text, with what the expectations broke', async () => {
    const run = await probe('--scenario', 'resend', '--via', PASS_THROUGH_VIA);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).toContain('duplicates: 1  false answers: 0');
    expect(run.stdout).toContain('FAILED: duplicates = 1, expected at most 0');
  });

  it('exit 2 on a usage error, before anything is started', async () => {
    const runs = await Promise.all([
      probe(),
      probe('--expect', 'errors=0', '--via', PASS_THROUGH_VIA),
      probe('--scenario', 'no-such', '--via', PASS_THROUGH_VIA),
      probe('--via', 'a gateway that names no upstream'),
      probe('--tool', 'record', '--', 'node', 'server.js'),
    ]);
    for (const run of runs) expect([run.code, run.stdout]).toEqual([2, '']);
    expect(runs[1]?.stderr).toContain('--expect errors=0');
    expect(runs[4]?.stderr).toContain('--tool, --args and --count');
  });
});
