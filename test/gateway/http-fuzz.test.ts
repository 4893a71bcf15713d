/**
 * The reliability fuzz at a small count against a gateway process: no
 * request hangs (refused-by-transport ones and their resends included), none
 * crashes the process, none gets a 5xx. The full count is
 * scripts/reliability-fuzz.ts.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { fuzzHttpFront } from './http-fuzz.js';

describe('reliability fuzz at the HTTP front (small count)', () => {
  let gateway: GatewayProcess;
  beforeAll(async () => {
    const dir = freshDir('http-fuzz');
    gateway = await startGatewayProcess(
      { data_dir: dir, upstreams: { counter: countingUpstream(freshDir('counts')) } },
      join(dir, 'idem.json'),
    );
  }, 60_000);
  afterAll(async () => {
    await gateway?.kill();
    removeTemporaries();
  });

  it('400 steps (seed 8): every request answered within its deadline, the resend after each refusal too', async () => {
    const tally = await fuzzHttpFront({
      url: gateway.url,
      count: 400,
      seed: 8,
      timeoutMs: 3_000,
      child: gateway.child,
    });
    console.info(`http fuzz: ${JSON.stringify(tally)}`);
    expect(tally.problems).toEqual([]);
    expect(tally.hung).toBe(0);
    expect(tally.crashed).toBe(0);
    expect(tally.serverErrors).toBe(0);
    expect(tally.resends).toBeGreaterThan(10);
    expect(tally.resendsAnswered).toBe(tally.resends);
    expect(tally.answered).toBe(tally.tried);
  }, 120_000);
});
