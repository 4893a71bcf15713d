import { describe, expect, it } from 'vitest';
import { clockTime, duration, isoTime, prettyJson, relative } from './format.js';

const AT = Date.UTC(2026, 11, 3, 12, 31, 5, 123);

describe('console formats', () => {
  it('writes times in UTC with milliseconds and the zone', () => {
    expect(isoTime(AT)).toBe('2026-12-03 12:31:05.123 UTC');
    expect(clockTime(AT)).toBe('12:31:05.123');
  });

  it('says how long ago against the clock it is given', () => {
    expect(relative(AT, AT + 400)).toBe('just now');
    expect(relative(AT, AT + 42_000)).toBe('42 s ago');
    expect(relative(AT, AT + 3 * 60_000 + 59_000)).toBe('3 min ago');
    expect(relative(AT, AT + 5 * 3_600_000)).toBe('5 h ago');
    expect(relative(AT, AT + 2 * 86_400_000)).toBe('2 d ago');
    expect(relative(AT + 10 * 60_000, AT)).toBe('in 10 min');
  });

  it('writes durations in the unit that reads best', () => {
    expect(duration(0)).toBe('0 ms');
    expect(duration(850)).toBe('850 ms');
    expect(duration(1250)).toBe('1.25 s');
    expect(duration(42_000)).toBe('42.0 s');
    expect(duration(200_000)).toBe('3 min 20 s');
    expect(duration(7_500_000)).toBe('2 h 5 min');
    expect(duration(3 * 86_400_000 + 4 * 3_600_000)).toBe('3 d 4 h');
  });

  it('indents JSON and leaves a cut preview as it is', () => {
    expect(prettyJson('{"a":1,"b":[2]}')).toEqual({
      text: '{\n  "a": 1,\n  "b": [\n    2\n  ]\n}',
      json: true,
    });
    expect(prettyJson('{"a":"long…')).toEqual({ text: '{"a":"long…', json: false });
  });
});
