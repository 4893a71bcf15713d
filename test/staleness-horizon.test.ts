import { describe, expect, it } from 'vitest';
import { CANDIDATES, type Candidate, runCell, type Scenario } from './support/staleness-horizon.js';

// Issue 26 item 4, pinned: a shorter replay horizon for un-annotated tools makes the demo's lost
// answer a second charge once the agent waits for the SDK's request timeout. The full table:
// npx tsx scripts/staleness-horizon.ts (docs/adr/0017-un-annotated-tools-keep-the-15-minute-window.md).

const candidate = (id: string): Candidate => CANDIDATES.find((c) => c.id === id)!;
const SDK_TIMEOUT_MS = 60_000; // DEFAULT_REQUEST_TIMEOUT_MSEC
const lostThenCalledAgain: Scenario = { kind: 'new_call', delayMs: SDK_TIMEOUT_MS, why: 'SDK timeout' };

describe('the replay horizon of un-annotated tools, against the demo’s lost answer', () => {
  it('the default (15 min) charges once when the agent calls again after the SDK timeout', async () => {
    const cell = await runCell(candidate('default'), lostThenCalledAgain);
    expect(cell.charges).toBe(1);
    expect(cell.agentSaw.at(-1)).toContain('[stored result, replayed]');
  });

  it('a 30 s horizon charges twice in the same scenario', async () => {
    const cell = await runCell(candidate('horizon-30s'), lostThenCalledAgain);
    expect(cell.charges).toBe(2);
    expect(cell.agentSaw.at(-1)).not.toContain('replayed');
  });

  it('"delivered" is the write: the lost answer is recorded delivered, so horizon 0 charges twice at once', async () => {
    const cell = await runCell(candidate('horizon-0'), { kind: 'new_call', delayMs: 1_000, why: 'at once' });
    expect(cell.recordedDelivered).toBe(true);
    expect(cell.charges).toBe(2);
  });

  it('the price of the default: a read 10 s later gets the first timestamp; a 5 s horizon does not', async () => {
    const read: Scenario = { kind: 'read', delayMs: 10_000, why: 'a step later' };
    expect((await runCell(candidate('default'), read)).stale).toBe(true);
    expect((await runCell(candidate('horizon-5s'), read)).stale).toBe(false);
  });
});
