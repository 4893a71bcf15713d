/**
 * npx tsx scripts/staleness-horizon.ts [--markdown]
 *
 * Issue 26 item 4: how stale may the default for un-annotated tools be? Runs
 * the demo's lost-response scenarios (the answer lost and re-sent, the answer
 * lost and the agent calling again, the agent timing out, two calls at once)
 * and two intended get_time calls, each after the delays real clients use,
 * under each candidate default (test/support/staleness-horizon.ts). Counts, at
 * the payment processor, the charges (2 = charged twice), and for the reads
 * whether the second intended call got the first one's timestamp (stale).
 * Time is an injected clock: a 20-minute delay takes no time. Exits 1 if
 * today's default charges twice inside its window.
 */
import { parseArgs } from 'node:util';
import {
  CANDIDATES,
  type CellResult,
  formatDelay,
  runCell,
  SCENARIOS,
  type Scenario,
} from '../test/support/staleness-horizon.js';

const { values } = parseArgs({ options: { markdown: { type: 'boolean', default: false } } });
const WINDOW_MS = 15 * 60_000;

const started = Date.now();
const results = new Map<string, CellResult>();
const key = (candidate: string, index: number) => `${candidate}#${index}`;
for (const candidate of CANDIDATES) {
  for (const [index, scenario] of SCENARIOS.entries()) {
    results.set(key(candidate.id, index), await runCell(candidate, scenario));
  }
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);

const NAMES: Record<Scenario['kind'], string> = {
  resend: 'answer lost, same request re-sent',
  new_call: 'answer lost, agent calls again',
  timeout: 'agent timed out, calls again',
  concurrent: 'two identical calls at once',
  read: 'get_time, then get_time again',
};
const cellText = (scenario: Scenario, r: CellResult) =>
  scenario.kind === 'read' ? (r.stale ? 'stale' : 'fresh') : r.charges === 1 ? '1' : `${r.charges} ✗`;

const header = ['scenario', 'after', ...CANDIDATES.map((c) => c.id)];
const rows = SCENARIOS.map((scenario, index) => [
  NAMES[scenario.kind],
  formatDelay(scenario.delayMs),
  ...CANDIDATES.map((c) => cellText(scenario, results.get(key(c.id, index))!)),
]);
const totals = CANDIDATES.map((c) => {
  let duplicates = 0;
  let stale = 0;
  for (const [index, scenario] of SCENARIOS.entries()) {
    const r = results.get(key(c.id, index))!;
    if (scenario.kind !== 'read' && r.charges > 1) duplicates++;
    if (r.stale) stale++;
  }
  return { duplicates, stale };
});
const charges = SCENARIOS.filter((s) => s.kind !== 'read').length;
const reads = SCENARIOS.length - charges;
rows.push([`charged twice (of ${charges})`, '', ...totals.map((t) => String(t.duplicates))]);
rows.push([`stale reads (of ${reads})`, '', ...totals.map((t) => String(t.stale))]);

if (values.markdown) {
  console.log(`| ${header.join(' | ')} |`);
  console.log(`| ${header.map(() => '---').join(' | ')} |`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
} else {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}
console.log('');
for (const c of CANDIDATES) console.log(`${c.id}: ${c.label}`);
console.log('');
for (const scenario of SCENARIOS)
  console.log(`${NAMES[scenario.kind]} after ${formatDelay(scenario.delayMs)}: ${scenario.why}`);

// What "delivered" means to the gateway: the first result of every lost-answer cell, as recorded.
let lost = 0;
let recordedDelivered = 0;
for (const c of CANDIDATES) {
  for (const [index, scenario] of SCENARIOS.entries()) {
    const r = results.get(key(c.id, index))!;
    if ((scenario.kind === 'resend' || scenario.kind === 'new_call') && r.recordedDelivered !== undefined) {
      lost++;
      if (r.recordedDelivered) recordedDelivered++;
    }
  }
}
console.log(
  `\nanswers the agent never received, recorded as delivered: ${recordedDelivered} of ${lost} (the write is all the gateway sees)`,
);
console.log(`${CANDIDATES.length * SCENARIOS.length} cells in ${seconds} s`);

const defaultIndex = CANDIDATES.findIndex((c) => c.id === 'default');
const regressions = SCENARIOS.filter(
  (s, index) =>
    s.kind !== 'read' &&
    s.delayMs < WINDOW_MS &&
    results.get(key(CANDIDATES[defaultIndex]!.id, index))!.charges > 1,
);
if (regressions.length > 0) {
  console.error(
    `today's default charged twice inside its window: ${regressions.map((s) => s.kind).join(', ')}`,
  );
  process.exit(1);
}
