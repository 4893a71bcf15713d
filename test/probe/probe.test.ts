/**
 * `idem probe --via` (issue 48): every scenario's count checked against a
 * known-good and a known-bad gateway in front of the probe's counting upstream.
 *
 * - known-good: idem gateway — every count as meant, no false answer;
 * - known-bad: a plain pass-through written with the SDK
 *   (fixtures/pass-through.ts), over HTTP at both ends so that both kills go
 *   through — every retry scenario runs the action again; for the deliberate
 *   repeat, which a pass-through gets right, the same pass-through deduplicating
 *   by arguments (--remember): the repeat never runs, and is answered `done`;
 * - and mcp-proxy, the pass-through people deploy, as measured in docs/probe.md.
 *
 * The full scorecards (kill scenarios included) run at once, each target on
 * ports and directories of its own; the counts are the evidence.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { openGatewayTarget, runProbe, SCENARIOS, type Scorecard } from '../../src/probe/index.js';
import { IDEM_GATEWAY_VIA, MCP_PROXY_VIA, PASS_THROUGH_VIA } from '../support/probe-vias.js';

async function probe(via: string, only?: string[]): Promise<Scorecard> {
  const target = await openGatewayTarget({ via });
  try {
    return await runProbe(target, { kill: true, ...(only ? { only } : {}) });
  } finally {
    await target.close();
  }
}

const scenario = (card: Scorecard, id: string) => {
  const found = card.scenarios.find((s) => s.id === id);
  if (!found) throw new Error(`${id} is not on the scorecard of ${card.target}`);
  return found;
};

/** The scenarios where the action is meant to run once and a pass-through runs it again. */
const RETRIED = SCENARIOS.map((s) => s.id).filter((id) => id !== 'deliberate-repeat');

let good: Scorecard;
let bad: Scorecard;
let remembering: Scorecard;
let mcpProxy: Scorecard;

beforeAll(async () => {
  // Settled, not raced: a target that fails still waits for the others to close their processes.
  const cards = await Promise.allSettled([
    probe(IDEM_GATEWAY_VIA),
    probe(PASS_THROUGH_VIA),
    probe(`${PASS_THROUGH_VIA} --remember`, ['deliberate-repeat']),
    probe(MCP_PROXY_VIA),
  ]);
  const [g, b, r, m] = cards.map((c) => {
    if (c.status === 'rejected') throw c.reason;
    return c.value;
  });
  if (!g || !b || !r || !m) throw new Error('a scorecard is missing');
  [good, bad, remembering, mcpProxy] = [g, b, r, m];
}, 170_000);

describe('idem probe --via: each scenario against a known-good and a known-bad gateway', () => {
  it.each(SCENARIOS.map((s) => s.id))('%s', (id) => {
    const ok = scenario(good, id);
    expect(ok.skipped ?? ok.error, `idem gateway, ${id}`).toBeUndefined();
    expect(ok, `idem gateway, ${id}`).toMatchObject({
      countedEffects: ok.expectedEffects,
      duplicates: 0,
      missing: 0,
      falseAnswers: 0,
    });
    expect(ok.expectedEffects).toBe(id === 'deliberate-repeat' ? 3 : 1);

    const wrong = scenario(id === 'deliberate-repeat' ? remembering : bad, id);
    expect(wrong.skipped ?? wrong.error, `known-bad, ${id}`).toBeUndefined();
    if (id === 'deliberate-repeat') {
      // Answered from memory: A ran once of twice, and the agent was told `done`.
      expect(wrong).toMatchObject({
        expectedEffects: 3,
        countedEffects: 2,
        missing: 1,
        answer: 'false success',
      });
      expect(wrong.falseAnswers).toBeGreaterThan(0);
    } else {
      expect(wrong.countedEffects, `known-bad, ${id}`).toBeGreaterThan(wrong.expectedEffects);
      expect(wrong.duplicates).toBe(wrong.countedEffects - wrong.expectedEffects);
    }
  });

  it('the totals: idem gateway none; the pass-through one duplicate per retry, nineteen among twenty at once', () => {
    expect(good).toMatchObject({ duplicates: 0, missing: 0, falseAnswers: 0, errors: 0 });
    expect(scenario(good, 'reissue-2026').note).toContain('2026-07-28');
    // What could not be known is said so, never "failed".
    expect(scenario(good, 'slow-timeout').answer).toMatch(/in flight|unknown|done/);
    expect(scenario(bad, 'concurrent-20').countedEffects).toBe(20);
    expect(bad.duplicates).toBe(RETRIED.length - 1 + 19);
    // A pass-through gets the deliberate repeat right.
    expect(scenario(bad, 'deliberate-repeat')).toMatchObject({ countedEffects: 3, falseAnswers: 0 });
  });

  it('mcp-proxy: every retry runs again, or (target killed) a false failure', () => {
    for (const id of RETRIED.filter((id) => !id.endsWith('-killed')))
      expect(scenario(mcpProxy, id).countedEffects, id).toBeGreaterThan(1);
    expect(scenario(mcpProxy, 'concurrent-20').countedEffects).toBe(20);
    // Its upstream died mid-call: "failed", though the action had started.
    expect(scenario(mcpProxy, 'target-killed').answers).toContain('false failure');
    expect(scenario(mcpProxy, 'deliberate-repeat')).toMatchObject({ countedEffects: 3, falseAnswers: 0 });
    expect(mcpProxy.duplicates).toBeGreaterThanOrEqual(RETRIED.length - 3 + 19);
    expect(mcpProxy.falseAnswers).toBeGreaterThan(0);
  });
});
