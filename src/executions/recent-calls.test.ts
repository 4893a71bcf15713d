import { describe, expect, it } from 'vitest';
import { RecentCalls } from './recent-calls.js';

const call = (n: number) => ({ tool: 't', arguments: { n }, actor: 'a' });

describe('RecentCalls: the arguments a deliberate repeat needs, bounded', () => {
  it('forgets the oldest beyond the count', () => {
    const recent = new RecentCalls(2, 1000);
    for (const n of [1, 2, 3]) recent.remember(`exe_${n}`, call(n), 10);
    expect(recent.get('exe_1')).toBeUndefined();
    expect(recent.get('exe_3')?.arguments).toEqual({ n: 3 });
  });

  it('forgets the oldest beyond the size budget, and never keeps one larger than a tenth of it', () => {
    const recent = new RecentCalls(100, 1000);
    for (const n of [1, 2, 3, 4, 5, 6]) recent.remember(`exe_${n}`, call(n), 90);
    recent.remember('exe_7', call(7), 500);
    expect(recent.get('exe_7')).toBeUndefined();
    recent.remember('exe_8', call(8), 100);
    recent.remember('exe_9', call(9), 100);
    recent.remember('exe_10', call(10), 100);
    recent.remember('exe_11', call(11), 100);
    // 6 × 90 + 4 × 100 = 940 fits; a fifth 100 does not: the oldest goes.
    recent.remember('exe_12', call(12), 100);
    expect(recent.get('exe_1')).toBeUndefined();
    expect(recent.get('exe_2')?.arguments).toEqual({ n: 2 });
    expect(recent.get('exe_12')?.arguments).toEqual({ n: 12 });
  });

  it('remembering a ref again replaces it (and its size)', () => {
    const recent = new RecentCalls(100, 1000);
    for (let i = 0; i < 50; i++) recent.remember('exe_same', call(i), 90);
    recent.remember('exe_other', call(0), 90);
    expect(recent.get('exe_same')?.arguments).toEqual({ n: 49 });
    expect(recent.get('exe_other')).toBeDefined();
  });
});
