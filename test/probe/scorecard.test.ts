/**
 * The probe's scoring, without a target: duplicates summed over actions and
 * scenarios, a false success or failure told apart from an honest answer,
 * `--expect` read and applied, and the `--json` shape (issue 48).
 */
import { describe, expect, it } from 'vitest';
import type { AnswerClass } from '../../src/probe/agent.js';
import type { Observed, Told } from '../../src/probe/scenarios.js';
import {
  broken,
  DEFAULT_EXPECT,
  erroredScore,
  formatScorecard,
  judge,
  parseExpect,
  type ScenarioScore,
  type Scorecard,
  scoreScenario,
  skippedScore,
  totals,
  verdict,
} from '../../src/probe/scorecard.js';

const told = (key: string, said: AnswerClass, countedThen: number, needs = 1): Told => ({
  key,
  needs,
  answer: { class: said, text: said },
  countedThen,
});

const score = (id: string, observed: Observed, counts: Record<string, number>): ScenarioScore =>
  scoreScenario({ id, name: id }, observed, counts, 5);

describe('probe scoring', () => {
  it('counts duplicates and missing effects per action, and sums them over the scenarios', () => {
    const twice = score('resend', { expected: { a: 1 }, told: [told('a', 'done', 2)] }, { a: 2 });
    expect(twice).toMatchObject({ expectedEffects: 1, countedEffects: 2, duplicates: 1, missing: 0 });
    const twenty = score(
      'concurrent-20',
      { expected: { a: 1 }, told: Array.from({ length: 20 }, () => told('a', 'done', 20)) },
      { a: 20 },
    );
    expect(twenty).toMatchObject({ countedEffects: 20, duplicates: 19, falseAnswers: 0 });
    // Two actions: one extra of A does not hide a missing B.
    const repeat = score(
      'deliberate-repeat',
      {
        expected: { a: 2, b: 1 },
        told: [told('a', 'done', 1), told('b', 'done', 0), told('a', 'done', 3, 2)],
      },
      { a: 3, b: 0 },
    );
    expect(repeat).toMatchObject({ expectedEffects: 3, countedEffects: 3, duplicates: 1, missing: 1 });

    const card = totals('t', 'gateway', [twice, twenty, repeat], 99);
    expect(card).toMatchObject({ duplicates: 21, missing: 1, errors: 0, ms: 99 });
  });

  it('a done without its effect is a false success; at the end, and as often as the call meant', () => {
    expect(judge(told('a', 'done', 0), { a: 0 })).toBe('false success');
    // The effect came later (the retry's): judged at the end, a done is true.
    expect(judge(told('a', 'done', 0), { a: 1 })).toBe('done');
    // The deliberate repeat needs two effects of A for its done to be true.
    expect(judge(told('a', 'done', 1, 2), { a: 1 })).toBe('false success');
    expect(judge(told('a', 'done', 2, 2), { a: 2 })).toBe('done');
  });

  it('a failure or a denial of an action that had taken effect when it was said is a false failure', () => {
    expect(judge(told('a', 'failed', 1), { a: 1 })).toBe('false failure');
    expect(judge(told('a', 'denied', 1), { a: 1 })).toBe('false failure');
    // Not yet counted when said: a later retry's effect does not make the failure false.
    expect(judge(told('a', 'failed', 0), { a: 1 })).toBe('failed');
  });

  it('in flight, unknown and no answer claim nothing, so they are never false', () => {
    for (const said of ['in flight', 'unknown', 'no answer'] as const) {
      expect(judge(told('a', said, 0), { a: 0 })).toBe(said);
      expect(judge(told('a', said, 5), { a: 5 })).toBe(said);
    }
  });

  it("a scenario's answer is its first false one, else its last; every answer is kept in order", () => {
    const honest = score(
      'again-same-session',
      { expected: { a: 1 }, told: [told('a', 'no answer', 1), told('a', 'done', 1)] },
      { a: 1 },
    );
    expect(honest).toMatchObject({ answer: 'done', answers: ['no answer', 'done'], falseAnswers: 0 });
    const lying = score(
      'target-killed',
      { expected: { a: 1 }, told: [told('a', 'failed', 1), told('a', 'failed', 1)] },
      { a: 1 },
    );
    expect(lying).toMatchObject({
      answer: 'false failure',
      answers: ['false failure', 'false failure'],
      falseAnswers: 2,
    });
    expect(totals('t', 'gateway', [honest, lying], 1).falseAnswers).toBe(2);
  });

  it('reads --expect: keys, = or <=, kebab-case, repeatable; refuses anything else', () => {
    expect(parseExpect('duplicates=0,falseAnswers=2')).toEqual({ duplicates: 0, falseAnswers: 2 });
    expect(parseExpect(' false-answers <= 1 , missing=3')).toEqual({ falseAnswers: 1, missing: 3 });
    // Repeatable: a later --expect adds to (and overrides) the defaults.
    const into = { ...DEFAULT_EXPECT };
    parseExpect('duplicates=25', into);
    parseExpect('missing=0', into);
    expect(into).toEqual({ duplicates: 25, falseAnswers: 0, missing: 0 });
    for (const bad of ['errors=0', 'duplicates', 'duplicates=-1', 'duplicates=x', 'duplicates>0'])
      expect(() => parseExpect(bad), bad).toThrow(/--expect/);
  });

  it('exits 0 when the totals meet --expect and every scenario ran through, 1 otherwise', () => {
    const dup = score('resend', { expected: { a: 1 }, told: [told('a', 'done', 2)] }, { a: 2 });
    const card = totals('t', 'gateway', [dup, skippedScore({ id: 's', name: 's' }, 'kills a process')], 1);
    expect(verdict(card, DEFAULT_EXPECT)).toEqual({
      exitCode: 1,
      failures: ['duplicates = 1, expected at most 0'],
    });
    expect(verdict(card, { ...DEFAULT_EXPECT, duplicates: 1 })).toEqual({ exitCode: 0, failures: [] });
    // A scenario the target could not be taken through fails the run, whatever the totals.
    const errored = totals(
      't',
      'gateway',
      [erroredScore({ id: 'e', name: 'e' }, 'it stopped serving', 3)],
      1,
    );
    expect(errored.errors).toBe(1);
    expect(verdict(errored, { duplicates: 99 })).toMatchObject({ exitCode: 1 });
    expect(broken(errored, {})).toEqual(['e could not be run through: it stopped serving']);
  });

  it('the --json shape: target, totals and scenarios with name, expected and counted effects, answer', () => {
    const s = score('resend', { expected: { a: 1 }, told: [told('a', 'done', 2)] }, { a: 2 });
    const card: Scorecard = JSON.parse(JSON.stringify(totals('my gateway', 'gateway', [s], 7)));
    expect(card).toEqual({
      target: 'my gateway',
      mode: 'gateway',
      duplicates: 1,
      missing: 0,
      falseAnswers: 0,
      errors: 0,
      ms: 7,
      scenarios: [
        {
          id: 'resend',
          name: 'resend',
          expectedEffects: 1,
          countedEffects: 2,
          duplicates: 1,
          missing: 0,
          answer: 'done',
          answers: ['done'],
          falseAnswers: 0,
          ms: 5,
        },
      ],
    });
    expect(formatScorecard(card)).toContain('duplicates: 1  false answers: 0  missing: 0');
  });
});
