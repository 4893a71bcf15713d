/**
 * `idem probe` (issue 48) measured on a known-good and a known-bad gateway in
 * front of its counting upstream: idem gateway (every count as meant, no false
 * answer) and mcp-proxy, a plain pass-through (every retry scenario a
 * duplicate, counted at the upstream). Each is a full scorecard, kill
 * scenarios included; the counts are the evidence.
 */
import { describe, expect, it } from 'vitest';
import { openGatewayTarget, runProbe, type Scorecard } from '../../src/probe/index.js';
import { IDEM_CLI } from '../support/idem-cli.js';
import { packageBin } from '../support/node22.js';

async function probe(via: string): Promise<Scorecard> {
  const target = await openGatewayTarget({ via });
  try {
    return await runProbe(target, { kill: true });
  } finally {
    await target.close();
  }
}

const byId = (card: Scorecard) => Object.fromEntries(card.scenarios.map((s) => [s.id, s]));

/** The scenarios where the action is meant to run once, and a pass-through runs it again. */
const RETRIED = [
  'resend',
  'again-same-session',
  'again-new-session',
  'reissue-2026',
  'concurrent-2',
  'concurrent-20',
  'slow-timeout',
];

describe('idem probe --via', () => {
  it('idem gateway: every scenario counted as meant, no false success or failure', async () => {
    const card = await probe(
      `${process.execPath} ${IDEM_CLI} gateway --listen 127.0.0.1:{port} -- {upstream_stdio}`,
    );
    const scenarios = byId(card);
    expect(card.scenarios.filter((s) => s.skipped || s.error)).toEqual([]);
    for (const s of card.scenarios) expect([s.id, s.countedEffects]).toEqual([s.id, s.expectedEffects]);
    expect(card).toMatchObject({ duplicates: 0, missing: 0, falseAnswers: 0, errors: 0 });
    expect(scenarios['reissue-2026']?.note).toContain('2026-07-28');
    // What could not be known is said so, never "failed".
    expect(scenarios['slow-timeout']?.answer).toMatch(/in flight|unknown|done/);
    expect(scenarios['deliberate-repeat']?.countedEffects).toBe(3);
  });

  it('mcp-proxy, a pass-through: every retry runs again at the upstream', async () => {
    const card = await probe(
      `${process.execPath} ${packageBin('mcp-proxy', 'mcp-proxy')} --host 127.0.0.1 --port {port} -- {upstream_stdio}`,
    );
    const scenarios = byId(card);
    for (const id of RETRIED) expect(scenarios[id]?.countedEffects, id).toBeGreaterThan(1);
    expect(scenarios['concurrent-20']?.countedEffects).toBe(20);
    // The deliberate repeat runs, as it should.
    expect(scenarios['deliberate-repeat']).toMatchObject({
      expectedEffects: 3,
      countedEffects: 3,
      falseAnswers: 0,
    });
    // One extra run in each retried scenario, nineteen among the twenty calls at once.
    expect(card.duplicates).toBeGreaterThanOrEqual(RETRIED.length - 1 + 19);
  });
});
