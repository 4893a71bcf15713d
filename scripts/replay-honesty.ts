/**
 * npx tsx scripts/replay-honesty.ts [--markdown] [--rule ID]… [--scenario ID]… [--strict]
 *
 * Issue 42: which repeats does each rule replay, and at what price? Runs the
 * lost-response suite (no action may run twice: effects counted at the far
 * side) and the deliberate-repeat suite (no stale answer: the world read
 * afterwards) under each rule (test/support/replay-honesty/), and prints the
 * table scenario × rule, totals per rule, and how long it took.
 *
 * Cells: a lost-response row shows effects counted / meant (`2/1 ✗`: an action
 * ran twice); a deliberate-repeat row shows `fresh`, `stale, stored first`
 * (the replayed answer's first text item is the stored content, the tool's
 * success or failure as it gave it: what a model reads first is a claim that
 * no longer holds), `stale, note first` (Idem's replay note comes first), or
 * `wrong` (not replayed, and still not as meant). A rule this build does not
 * know is `n/a`. Rows marked † are a known limit: no signal the gateway
 * observes tells them from their twin.
 *
 * Exits 1 if the default rule (`new_if_moved_on` once this build has it, else
 * today's) runs a lost-response action twice in a row that is not a known
 * limit, or (with --strict) in any row; or if a rule under test leaves any
 * action of a lost-response row not run at all.
 */
import { parseArgs } from 'node:util';
import { builtCli } from '../test/support/dist.js';
import {
  asBuilt,
  type CellResult,
  defaultRuleId,
  RULES,
  type RuleAsBuilt,
  runCell,
  SCENARIOS,
  type Scenario,
} from '../test/support/replay-honesty/index.js';

const { values } = parseArgs({
  options: {
    markdown: { type: 'boolean', default: false },
    strict: { type: 'boolean', default: false },
    rule: { type: 'string', multiple: true },
    scenario: { type: 'string', multiple: true },
  },
});

// The gateway rows run the compiled CLI: compile it first if src/ is newer.
builtCli();

const rules: RuleAsBuilt[] = RULES.filter((r) => !values.rule || values.rule.includes(r.id)).map(asBuilt);
const scenarios: Scenario[] = SCENARIOS.filter((s) => !values.scenario || values.scenario.includes(s.id));

const started = Date.now();
const results = new Map<string, CellResult>();
const key = (rule: string, scenario: string) => `${rule}#${scenario}`;
for (const rule of rules) {
  if (!rule.available) continue;
  for (const scenario of scenarios) {
    process.stderr.write(`${rule.rule.id} × ${scenario.id} … `);
    const result = await runCell(rule, scenario);
    process.stderr.write(`${cellText(scenario, result)} (${result.ms} ms)\n`);
    results.set(key(rule.rule.id, scenario.id), result);
  }
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);

function cellText(scenario: Scenario, r: CellResult): string {
  if (scenario.suite === 'lost_response') {
    const marks = `${r.duplicates > 0 ? ' ✗' : ''}${r.missing > 0 ? ' (missing)' : ''}`;
    return `${r.counted}/${r.expected}${marks}`;
  }
  if (r.wrong) return 'wrong';
  if (!r.stale) return 'fresh';
  return r.staleNoteFirst ? 'stale, note first' : 'stale, stored first';
}

const WORLD: Record<Scenario['world'], string> = { library: 'lib', filesystem: 'fs', memory: 'mem' };
const columnName = (r: RuleAsBuilt) => `${r.rule.id}${r.dropped.length > 0 ? '*' : ''}`;
const header = ['scenario', 'world', ...rules.map(columnName)];
const rowFor = (scenario: Scenario) => [
  `${scenario.name}${scenario.limit ? ' †' : ''}`,
  WORLD[scenario.world],
  ...rules.map((rule) => {
    const r = results.get(key(rule.rule.id, scenario.id));
    return r ? cellText(scenario, r) : 'n/a';
  }),
];

const lost = scenarios.filter((s) => s.suite === 'lost_response');
const repeats = scenarios.filter((s) => s.suite === 'deliberate_repeat');

interface Totals {
  duplicateRows: number;
  duplicateRowsOutsideLimits: number;
  duplicates: number;
  missing: number;
  stale: number;
  staleStoredFirst: number;
  staleNoteFirst: number;
  staleOutsideLimits: number;
  wrong: number;
  replays: number;
  replaysNoteFirst: number;
}

function totalsOf(rule: RuleAsBuilt): Totals | undefined {
  if (!rule.available) return undefined;
  const t: Totals = {
    duplicateRows: 0,
    duplicateRowsOutsideLimits: 0,
    duplicates: 0,
    missing: 0,
    stale: 0,
    staleStoredFirst: 0,
    staleNoteFirst: 0,
    staleOutsideLimits: 0,
    wrong: 0,
    replays: 0,
    replaysNoteFirst: 0,
  };
  for (const scenario of scenarios) {
    const r = results.get(key(rule.rule.id, scenario.id));
    if (!r) continue;
    t.replays += r.replays;
    t.replaysNoteFirst += r.replaysNoteFirst;
    t.missing += r.missing;
    if (r.duplicates > 0) {
      t.duplicateRows++;
      t.duplicates += r.duplicates;
      if (!scenario.limit) t.duplicateRowsOutsideLimits++;
    }
    if (r.stale) {
      t.stale++;
      if (r.staleNoteFirst) t.staleNoteFirst++;
      else t.staleStoredFirst++;
      if (!scenario.limit) t.staleOutsideLimits++;
    }
    if (r.wrong) t.wrong++;
  }
  return t;
}

const totals = rules.map(totalsOf);
const total = (label: string, pick: (t: Totals) => number) => [
  label,
  '',
  ...totals.map((t) => (t ? String(pick(t)) : 'n/a')),
];
const rows = [
  ...lost.map(rowFor),
  ...repeats.map(rowFor),
  total(`lost-response rows with an action run twice (of ${lost.length})`, (t) => t.duplicateRows),
  total('… of them outside the known limits †', (t) => t.duplicateRowsOutsideLimits),
  total(`deliberate repeats answered stale (of ${repeats.length})`, (t) => t.stale),
  total('… stale, stored content first', (t) => t.staleStoredFirst),
  total('… stale, note first', (t) => t.staleNoteFirst),
  total('… stale outside the known limits †', (t) => t.staleOutsideLimits),
  total('replayed answers, all rows (retries and stale repeats)', (t) => t.replays),
  total('… right (not stale), note first', (t) => t.replaysNoteFirst - t.staleNoteFirst),
  total(
    '… right (not stale), stored content first',
    (t) => t.replays - t.replaysNoteFirst - t.staleStoredFirst,
  ),
];

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
for (const rule of rules) {
  const extra = !rule.available
    ? ` — not in this build (${rule.why})`
    : rule.dropped.length > 0
      ? ` — * this build does not know ${rule.dropped.join(', ')}: run without it (failures replayed)`
      : '';
  console.log(`${rule.rule.id}: ${rule.rule.label}${extra}`);
}
console.log('\n† known limits:');
for (const s of scenarios.filter((s) => s.limit)) console.log(`  ${s.name}: ${s.limit}`);
const unavailable = rules.filter((r) => !r.available).length;
console.log(
  `\n${results.size} cells in ${seconds} s (${scenarios.length} scenarios × ${rules.length - unavailable} rules${unavailable ? `; ${unavailable} not in this build` : ''})`,
);

// The default rule must not run a lost-response action twice (outside its known limits).
const defaultId = defaultRuleId();
const defaultIndex = rules.findIndex((r) => r.rule.id === defaultId);
const failures: string[] = [];
if (defaultIndex >= 0) {
  for (const scenario of lost) {
    const r = results.get(key(defaultId, scenario.id));
    if (r && r.duplicates > 0 && (values.strict || !scenario.limit))
      failures.push(`${defaultId} ran an action twice: ${scenario.name}`);
  }
}
for (const rule of rules) {
  for (const scenario of lost) {
    const r = results.get(key(rule.rule.id, scenario.id));
    if (r && r.missing > 0) failures.push(`${rule.rule.id} left an action not run: ${scenario.name}`);
  }
}
if (failures.length > 0) {
  for (const failure of failures) console.error(failure);
  process.exit(1);
}
