/**
 * `idem probe`: a retry-safety test of any MCP gateway or server. Fixed retry
 * scenarios (scenarios.ts) driven by the official SDK clients (agent.ts)
 * against a target (targets.ts), effects counted at the far side, scored
 * (scorecard.ts).
 */
export type { AnswerClass } from './agent.js';
export { type ProbeOptions, runProbe } from './probe.js';
export { SCENARIOS } from './scenarios.js';
export {
  broken,
  DEFAULT_EXPECT,
  type ExpectKey,
  formatScorecard,
  parseExpect,
  type ScenarioScore,
  type Scorecard,
  verdict,
} from './scorecard.js';
export {
  type GatewayTargetOptions,
  openGatewayTarget,
  openServerTarget,
  type ProbeTarget,
  type ServerTargetOptions,
} from './targets.js';
