/**
 * Every journal tamper case of test/support/tamper.ts, on a copy of a real
 * run's SQLite store (`--calls` executions, default 2 000): does
 * `idem audit verify` (the function the command runs) detect it, and does it
 * name the right row or execution? Prints one line per case and the totals;
 * exits 1 if any case was missed.
 *
 *   npx tsx scripts/reliability-tamper.ts [--calls 2000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { verifyFromFlags } from '../src/cli/audit.js';
import { buildSqliteFixture, TAMPER_CASES, tamperedCopy } from '../test/support/tamper.js';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '2000' } } });
const calls = Number(values.calls);
const root = mkdtempSync(join(tmpdir(), 'idem-reliability-tamper-'));
try {
  const started = performance.now();
  const fixture = await buildSqliteFixture(join(root, 'run'), calls);
  process.stdout.write(`fixture: ${calls} calls in ${Math.round(performance.now() - started)} ms\n`);
  let detected = 0;
  let named = 0;
  for (const [index, tamperCase] of TAMPER_CASES.entries()) {
    const copy = tamperedCopy(fixture, join(root, `case-${index}`));
    let outcome: ReturnType<typeof tamperCase.tamper>;
    try {
      outcome = tamperCase.tamper(copy);
    } finally {
      copy.close();
    }
    const { report } = await verifyFromFlags(outcome.verify ?? { db: join(copy.dir, 'idem.db') });
    const bad = report.firstBad as Record<string, unknown> | undefined;
    const caught = !report.ok;
    const right = caught && Object.entries(outcome.expect).every(([k, v]) => bad?.[k] === v);
    if (caught) detected++;
    if (right) named++;
    const verdict = caught ? (right ? 'detected' : 'detected (named differently)') : 'MISSED';
    const found = bad ? ` — ${bad.problem} ${bad.executionId ?? `seq ${bad.seq}`}` : '';
    process.stdout.write(`${verdict.padEnd(30)} ${tamperCase.name}${found}\n`);
    rmSync(copy.dir, { recursive: true, force: true });
  }
  const total = TAMPER_CASES.length;
  process.stdout.write(
    `\n${detected}/${total} detected, ${total - detected} missed; ${named}/${total} named the expected row or execution\n`,
  );
  process.exitCode = detected === total ? 0 : 1;
} finally {
  rmSync(root, { recursive: true, force: true });
}
