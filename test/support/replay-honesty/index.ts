/**
 * Issue 42: replay honesty, measured. Two suites, every scenario under every
 * rule (rules.ts), each cell in a world of its own:
 * - lost-response rows (no action may run twice): effects counted at the far
 *   side against what was meant;
 * - deliberate-repeat rows (no stale answer): the world read afterwards; a
 *   replayed answer to a repeat that left the world otherwise than meant is
 *   stale, and whether the model reads the note or the stored content first
 *   is kept.
 *
 * Shared by scripts/replay-honesty.ts (the table) and test/replay-honesty.test.ts.
 */
import { AnswerLog } from './agent.js';
import { GATEWAY_SCENARIOS, type GatewayScenario } from './gateway-scenarios.js';
import { openGatewayWorld } from './gateway-world.js';
import { LIBRARY_SCENARIOS, type LibraryScenario } from './library-scenarios.js';
import { openLibraryWorld } from './library-world.js';
import { type CellResult, judge } from './outcome.js';
import type { RuleAsBuilt } from './rules.js';

export type { CellResult, Suite } from './outcome.js';
export {
  asBuilt,
  defaultRuleId,
  RULES,
  type Rule,
  type RuleAsBuilt,
  type RuleId,
  ruleById,
} from './rules.js';

export type Scenario = LibraryScenario | GatewayScenario;

/** Every row: the library's first (the demo's world), then the community servers'. */
export const SCENARIOS: readonly Scenario[] = [...LIBRARY_SCENARIOS, ...GATEWAY_SCENARIOS];

export function scenarioById(id: string): Scenario {
  const scenario = SCENARIOS.find((s) => s.id === id);
  if (!scenario) throw new Error(`no scenario ${id}`);
  return scenario;
}

/** Runs one scenario under one rule, in a fresh world; throws if the rule is not in this build. */
export async function runCell(rule: RuleAsBuilt, scenario: Scenario): Promise<CellResult> {
  if (!rule.available) throw new Error(`rule ${rule.rule.id} is not in this build: ${rule.why}`);
  const log = new AnswerLog();
  const started = Date.now();
  if (scenario.world === 'library') {
    const world = await openLibraryWorld(rule);
    try {
      return judge(await scenario.run(world, log), log, Date.now() - started);
    } finally {
      await world.close();
    }
  }
  const world = await openGatewayWorld(scenario.world, rule, scenario.front ?? 'http');
  try {
    return judge(await scenario.run(world, log), log, Date.now() - started);
  } catch (error) {
    throw new Error(
      `${scenario.id}: ${String(error)}\ngateway stderr:\n${world.gateway?.stderr() ?? '(stdio: ignored)'}`,
    );
  } finally {
    await world.close();
  }
}
