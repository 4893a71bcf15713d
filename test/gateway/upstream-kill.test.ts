import { afterAll, describe, expect, it } from 'vitest';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { runKillUpstreamLoop } from './kill-upstream-loop.js';

afterAll(removeTemporaries);

describe('an upstream killed while requests are being written to it', () => {
  it('costs only the calls it carried: the gateway lives, every call gets an honest answer, nothing stays dispatched', async () => {
    // The full count runs in scripts/reliability-kill-upstream.ts.
    const tally = await runKillUpstreamLoop({
      dir: freshDir('upstream-kill'),
      rounds: 10,
      callsPerRound: 6,
      payloadBytes: 256 * 1024,
    });
    expect(tally.problems).toEqual([]);
    expect(tally.unhandled).toEqual([]);
    expect(tally.gatewayAlive).toBe(true);
    expect(tally.survived).toBe(10);
    expect(tally).toMatchObject({ lost: 0, duplicated: 0, hung: 0, leftDispatched: 0 });
    expect(tally.done + tally.notExecuted + tally.unknown).toBe(tally.tried);
    // The kills did land on calls in flight (otherwise nothing was tested).
    expect(tally.notExecuted + tally.unknown).toBeGreaterThan(0);
  }, 180_000);
});
