import { describe, expect, it } from 'vitest';
import { idleSweepIntervalMs, idleTimeouts, isIdle } from './idle-sessions.js';

const IDLE = 1_000;
const UNUSED = 100;
const NOW = 50_000;
const TIMEOUTS = { usedMs: IDLE, unusedMs: UNUSED };

describe('isIdle', () => {
  it('a used session whose last request ended the timeout or more ago is idle; a millisecond less is not', () => {
    expect(isIdle({ busy: 0, used: true, lastSeen: NOW - IDLE - 1 }, NOW, TIMEOUTS)).toBe(true);
    expect(isIdle({ busy: 0, used: true, lastSeen: NOW - IDLE }, NOW, TIMEOUTS)).toBe(true);
    expect(isIdle({ busy: 0, used: true, lastSeen: NOW - IDLE + 1 }, NOW, TIMEOUTS)).toBe(false);
  });

  it('a session that never got past the handshake is idle after the shorter unused timeout', () => {
    expect(isIdle({ busy: 0, used: false, lastSeen: NOW - UNUSED }, NOW, TIMEOUTS)).toBe(true);
    expect(isIdle({ busy: 0, used: false, lastSeen: NOW - UNUSED + 1 }, NOW, TIMEOUTS)).toBe(false);
  });

  it('a session busy with a request or a stream is never idle, however old', () => {
    expect(isIdle({ busy: 1, used: true, lastSeen: 0 }, NOW, TIMEOUTS)).toBe(false);
    expect(isIdle({ busy: 1, used: false, lastSeen: 0 }, NOW, TIMEOUTS)).toBe(false);
  });

  it('a timeout of 0 never closes', () => {
    expect(isIdle({ busy: 0, used: true, lastSeen: 0 }, NOW, { usedMs: 0, unusedMs: 0 })).toBe(false);
  });
});

describe('idleTimeouts', () => {
  it('defaults: 10 minutes in use, 1 minute unused; the unused one never outlasts the idle one, and is off with it', () => {
    expect(idleTimeouts()).toEqual({ usedMs: 600_000, unusedMs: 60_000 });
    expect(idleTimeouts(30_000)).toEqual({ usedMs: 30_000, unusedMs: 30_000 });
    expect(idleTimeouts(0)).toEqual({ usedMs: 0, unusedMs: 0 });
    expect(idleTimeouts(600_000, 5_000)).toEqual({ usedMs: 600_000, unusedMs: 5_000 });
  });
});

describe('idleSweepIntervalMs', () => {
  it('is half the shortest timeout, at least 10 ms and at most a minute; 0 when both are off', () => {
    expect(idleSweepIntervalMs({ usedMs: IDLE, unusedMs: IDLE })).toBe(500);
    expect(idleSweepIntervalMs(TIMEOUTS)).toBe(50);
    expect(idleSweepIntervalMs({ usedMs: 4, unusedMs: 0 })).toBe(10);
    expect(idleSweepIntervalMs({ usedMs: 30 * 60_000, unusedMs: 0 })).toBe(60_000);
    expect(idleSweepIntervalMs({ usedMs: 0, unusedMs: 0 })).toBe(0);
  });
});
