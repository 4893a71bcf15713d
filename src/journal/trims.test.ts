import { describe, expect, it } from 'vitest';
import {
  TRIM_JOURNALED_FIELD,
  TRIMMED_PER_EVENT,
  trimmedEvents,
  trimmedIds,
  withTrimJournaled,
} from './trims.js';

describe('trimmedEvents', () => {
  it('names every id once, in id order, at most TRIMMED_PER_EVENT per event', () => {
    const ids = Array.from(
      { length: 2 * TRIMMED_PER_EVENT + 1 },
      (_, i) => `exe_${String(i).padStart(5, '0')}`,
    );
    const events = trimmedEvents([...ids].reverse(), 172_800_000);
    const named = events.map((e) => trimmedIds(e.detail ?? {}));
    expect(named.map((n) => n.length)).toEqual([TRIMMED_PER_EVENT, TRIMMED_PER_EVENT, 1]);
    expect(named.flat()).toEqual(ids);
    expect(events.every((e) => e.kind === 'trimmed' && e.detail?.retentionMs === 172_800_000)).toBe(true);
  });

  it('a sweep that trims nothing journals nothing', () => {
    expect(trimmedEvents([], 0)).toEqual([]);
  });
});

describe('withTrimJournaled', () => {
  it("marks only the claimed execution's accepted event", () => {
    const events = withTrimJournaled('exe_a', [
      { kind: 'received', executionId: 'exe_a' },
      { kind: 'accepted', executionId: 'exe_a', detail: { tool: 't' } },
      { kind: 'accepted', executionId: 'exe_b' },
    ]);
    expect(events?.map((e) => e.detail)).toEqual([
      undefined,
      { tool: 't', [TRIM_JOURNALED_FIELD]: true },
      undefined,
    ]);
  });
});
