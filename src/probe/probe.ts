import { randomBytes } from 'node:crypto';
import { messageOf } from '../errors.js';
import { type ProbeScenario, runScenario, SCENARIOS } from './scenarios.js';
import {
  erroredScore,
  type ScenarioScore,
  type Scorecard,
  scoreScenario,
  skippedScore,
  totals,
} from './scorecard.js';
import type { ProbeTarget } from './targets.js';

export interface ProbeOptions {
  /** Run the scenarios that kill a process (the target, the gateway). */
  kill?: boolean;
  /** Only these scenarios (ids). */
  only?: readonly string[];
  /** Told as each scenario ends. */
  onScenario?: (score: ScenarioScore) => void;
}

function skipReason(scenario: ProbeScenario, target: ProbeTarget, options: ProbeOptions): string | undefined {
  if (scenario.kill && !options.kill) return 'kills a process: add --kill';
  if (scenario.needs === 'controls' && !target.controls)
    return 'needs a tool the probe controls (gateway mode)';
  if (scenario.needs === 'gateway-restart' && !target.controls?.restartGateway)
    return 'needs a gateway on an HTTP port ({port}) to restart';
  return undefined;
}

/** Runs the fixed scenarios against `target`, one after another, and scores them. */
export async function runProbe(target: ProbeTarget, options: ProbeOptions = {}): Promise<Scorecard> {
  const started = Date.now();
  // Keys of their own for each run: a second probe of one server is not answered from the first's.
  const runId = randomBytes(4).toString('hex');
  const scores: ScenarioScore[] = [];
  for (const scenario of SCENARIOS) {
    if (options.only && !options.only.includes(scenario.id)) continue;
    const why = skipReason(scenario, target, options);
    let score: ScenarioScore;
    if (why) score = skippedScore(scenario, why);
    else {
      const at = Date.now();
      try {
        const observed = await runScenario(scenario, target, runId);
        await target.settle();
        const counts: Record<string, number> = {};
        for (const key of Object.keys(observed.expected)) counts[key] = await target.count(key);
        score = scoreScenario(scenario, observed, counts, Date.now() - at);
      } catch (error) {
        // A target that cannot go through a scenario (it stopped serving, it refused to start) fails it.
        score = erroredScore(scenario, messageOf(error), Date.now() - at);
      }
    }
    scores.push(score);
    options.onScenario?.(score);
  }
  return totals(target.label, target.mode, scores, Date.now() - started);
}
