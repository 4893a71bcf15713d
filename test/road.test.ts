import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROAD_BOUNDS, walkRoad } from '../scripts/road.js';

// The road of one effectful tools/call (docs/architecture.md), recomputed from the source: the
// bounds issue 45 set, held on every run.

describe('the road of one effectful tools/call', () => {
  const road = walkRoad(undefined, resolve(import.meta.dirname, '../src'));

  it('goes from the session dispatch to engine.execute', () => {
    expect(road.files[0]).toBe('gateway/sessions/session.ts');
    expect(road.road.at(-1)?.callee).toBe('ExecutionEngine.execute');
    expect(road.unresolved).toEqual([]);
  });

  it(`enters at most ${ROAD_BOUNDS.files} files, none twice, and never climbs back up`, () => {
    expect(road.files.length).toBeLessThanOrEqual(ROAD_BOUNDS.files);
    expect(road.twice).toEqual([]);
    expect(road.climbs).toEqual([]);
  });

  it('hands the call to one handler, which calls nothing back in what called it', () => {
    const fromSession = road.road.filter((e) => e.from === 'gateway/sessions/session.ts');
    expect(fromSession.map((e) => e.callee)).toEqual(['callTool']);
    expect(road.road.every((e) => !e.to.includes('gateway/sessions/session.ts'))).toBe(true);
  });
});
