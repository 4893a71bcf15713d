import { describe, expect, it } from 'vitest';
import { idleSweepIntervalMs, isIdle } from './idle-sessions.js';

const IDLE = 1_000;
const NOW = 50_000;

describe('isIdle', () => {
  it('a session whose last request ended the timeout or more ago is idle; a millisecond less is not', () => {
    expect(isIdle({ busy: 0, lastSeen: NOW - IDLE - 1 }, NOW, IDLE)).toBe(true);
    expect(isIdle({ busy: 0, lastSeen: NOW - IDLE }, NOW, IDLE)).toBe(true);
    expect(isIdle({ busy: 0, lastSeen: NOW - IDLE + 1 }, NOW, IDLE)).toBe(false);
  });

  it('a session busy with a request or a stream is never idle, however old', () => {
    expect(isIdle({ busy: 1, lastSeen: 0 }, NOW, IDLE)).toBe(false);
  });
});

describe('idleSweepIntervalMs', () => {
  it('is half the timeout, at least 10 ms and at most a minute', () => {
    expect(idleSweepIntervalMs(IDLE)).toBe(500);
    expect(idleSweepIntervalMs(4)).toBe(10);
    expect(idleSweepIntervalMs(30 * 60_000)).toBe(60_000);
  });
});
