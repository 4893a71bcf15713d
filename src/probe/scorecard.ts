/**
 * The scorecard: per scenario, the effects counted at the far side against
 * those meant, and the honesty of what the agent was told. An answer is false
 * when the count contradicts it: `done` for an action that did not take
 * effect (as often as the call meant; counted at the end), or `failed`/`denied`
 * for one that had taken effect when the answer arrived — a model told
 * "failed" calls again. `in flight`, `unknown` and `no answer`
 * never claim either, so they are never false (only unhelpful).
 */
import type { AnswerClass } from './agent.js';
import type { Observed } from './scenarios.js';

export type Honesty = AnswerClass | 'false success' | 'false failure';

export interface ScenarioScore {
  id: string;
  name: string;
  expectedEffects: number;
  countedEffects: number;
  /** Effects counted beyond those meant. */
  duplicates: number;
  /** Effects meant that never happened. */
  missing: number;
  /** The last answer the agent was told (for calls at once: the worst one), judged. */
  answer: Honesty;
  /** Every answer, judged, in order. */
  answers: Honesty[];
  falseAnswers: number;
  note?: string;
  /** Set when the scenario did not run, and why. */
  skipped?: string;
  /** Set when the scenario could not be carried through against this target (it stopped serving…). */
  error?: string;
  ms: number;
}

export interface Scorecard {
  target: string;
  mode: 'gateway' | 'server';
  duplicates: number;
  missing: number;
  falseAnswers: number;
  /** Scenarios the target could not be taken through. */
  errors: number;
  scenarios: ScenarioScore[];
  ms: number;
}

export function judge(told: Observed['told'][number], counts: Record<string, number>): Honesty {
  const n = counts[told.key] ?? 0;
  const { class: said } = told.answer;
  if (said === 'done' && n < told.needs) return 'false success';
  // A failure is judged by what had happened when it was said: a later retry's effect does not make it false.
  if ((said === 'failed' || said === 'denied') && told.countedThen >= told.needs) return 'false failure';
  return said;
}

const isFalse = (h: Honesty) => h === 'false success' || h === 'false failure';

export function scoreScenario(
  scenario: { id: string; name: string },
  observed: Observed,
  counts: Record<string, number>,
  ms: number,
): ScenarioScore {
  let expectedEffects = 0;
  let countedEffects = 0;
  let duplicates = 0;
  let missing = 0;
  for (const [key, meant] of Object.entries(observed.expected)) {
    const n = counts[key] ?? 0;
    expectedEffects += meant;
    countedEffects += n;
    duplicates += Math.max(0, n - meant);
    missing += Math.max(0, meant - n);
  }
  const answers = observed.told.map((t) => judge(t, counts));
  const last = answers[answers.length - 1] ?? 'no answer';
  return {
    id: scenario.id,
    name: scenario.name,
    expectedEffects,
    countedEffects,
    duplicates,
    missing,
    answer: answers.find(isFalse) ?? last,
    answers,
    falseAnswers: answers.filter(isFalse).length,
    ...(observed.note ? { note: observed.note } : {}),
    ms,
  };
}

export function skippedScore(scenario: { id: string; name: string }, why: string): ScenarioScore {
  return { ...emptyScore(scenario), skipped: why };
}

export function erroredScore(
  scenario: { id: string; name: string },
  error: string,
  ms: number,
): ScenarioScore {
  return { ...emptyScore(scenario), error, ms };
}

function emptyScore(scenario: { id: string; name: string }): ScenarioScore {
  return {
    id: scenario.id,
    name: scenario.name,
    expectedEffects: 0,
    countedEffects: 0,
    duplicates: 0,
    missing: 0,
    answer: 'no answer',
    answers: [],
    falseAnswers: 0,
    ms: 0,
  };
}

export function totals(
  target: string,
  mode: Scorecard['mode'],
  scenarios: ScenarioScore[],
  ms: number,
): Scorecard {
  const sum = (pick: (s: ScenarioScore) => number) => scenarios.reduce((n, s) => n + pick(s), 0);
  return {
    target,
    mode,
    duplicates: sum((s) => s.duplicates),
    missing: sum((s) => s.missing),
    falseAnswers: sum((s) => s.falseAnswers),
    errors: scenarios.filter((s) => s.error !== undefined).length,
    scenarios,
    ms,
  };
}

/** `1 done, 19 in flight`: the answers of a scenario, grouped in the order they first came. */
export function answersText(answers: Honesty[]): string {
  const counts = new Map<Honesty, number>();
  for (const a of answers) counts.set(a, (counts.get(a) ?? 0) + 1);
  return [...counts].map(([a, n]) => (n > 1 ? `${n}× ${a}` : a)).join(', ');
}

export function formatScorecard(card: Scorecard): string {
  const rows = card.scenarios.map((s) => [
    s.name,
    s.skipped || s.error ? '-' : `${s.expectedEffects}`,
    s.skipped || s.error
      ? '-'
      : `${s.countedEffects}${s.duplicates > 0 ? ' ✗' : s.missing > 0 ? ' (missing)' : ''}`,
    s.skipped
      ? `skipped: ${s.skipped}`
      : s.error
        ? `error: ${s.error.split('\n')[0]}`
        : `${answersText(s.answers)}${s.note ? `  (${s.note})` : ''}`,
  ]);
  const header = ['scenario', 'expected', 'counted', 'what the agent was told (in order)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const ran = card.scenarios.filter((s) => !s.skipped).length;
  const errors = card.errors > 0 ? `  errors: ${card.errors}` : '';
  return [
    `idem probe (${card.mode} mode): ${card.target}`,
    '',
    line(header),
    ...rows.map(line),
    '',
    `duplicates: ${card.duplicates}  false answers: ${card.falseAnswers}  missing: ${card.missing}${errors}  (${ran} scenarios in ${(card.ms / 1000).toFixed(1)} s)`,
  ].join('\n');
}

export type ExpectKey = 'duplicates' | 'falseAnswers' | 'missing';

/** What `idem probe` expects without `--expect`: no duplicate, no false answer. */
export const DEFAULT_EXPECT: Readonly<Partial<Record<ExpectKey, number>>> = {
  duplicates: 0,
  falseAnswers: 0,
};

/** `duplicates=0,falseAnswers=0` → the most each total may be. */
export function parseExpect(
  text: string,
  into: Partial<Record<ExpectKey, number>> = {},
): Partial<Record<ExpectKey, number>> {
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^([\w-]+)\s*(?:=|<=)\s*(\d+)$/.exec(part);
    const key = match?.[1]?.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
    if (!match || !key || !['duplicates', 'falseAnswers', 'missing'].includes(key))
      throw new Error(`--expect ${part}: expected duplicates=N, falseAnswers=N or missing=N`);
    into[key as ExpectKey] = Number(match[2]);
  }
  return into;
}

/** The expectations a scorecard breaks, one line each (none: it passes). */
export function broken(card: Scorecard, expect: Partial<Record<ExpectKey, number>>): string[] {
  return [
    ...(Object.entries(expect) as [ExpectKey, number][])
      .filter(([key, most]) => card[key] > most)
      .map(([key, most]) => `${key} = ${card[key]}, expected at most ${most}`),
    ...card.scenarios.filter((s) => s.error).map((s) => `${s.id} could not be run through: ${s.error}`),
  ];
}

/** The probe's exit code: 0 when the scorecard meets `expect` and every scenario ran through, 1 otherwise. */
export function verdict(
  card: Scorecard,
  expect: Partial<Record<ExpectKey, number>>,
): { exitCode: 0 | 1; failures: string[] } {
  const failures = broken(card, expect);
  return { exitCode: failures.length === 0 ? 0 : 1, failures };
}
