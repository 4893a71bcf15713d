import { describe, expect, it } from 'vitest';
import { CIRCULAR, MAX_JSON_DEPTH, TOO_DEEP, withinDepth } from './json-depth.js';

/** An array nested `depth` levels (the outer array is level 0). */
function nested(depth: number): unknown {
  let node: unknown = [];
  for (let i = 0; i < depth; i++) node = [node];
  return node;
}

describe('withinDepth', () => {
  it('hands back the value itself when it is shallow enough', () => {
    const shallow = { content: [{ type: 'text', text: 'ok' }], deep: nested(MAX_JSON_DEPTH - 2) };
    expect(withinDepth(shallow)).toBe(shallow);
  });

  it('cuts what lies at MAX_JSON_DEPTH and below, in a copy, keeping the rest and __proto__ members', () => {
    const parsed = JSON.parse(`{"__proto__":{"kept":true},"tree":${JSON.stringify(nested(300))},"text":"x"}`);
    const before = JSON.stringify(parsed);
    const cut = withinDepth(parsed) as Record<string, unknown>;
    expect(cut).not.toBe(parsed);
    expect(JSON.stringify(parsed)).toBe(before);
    expect(Object.keys(cut)).toEqual(['__proto__', 'tree', 'text']);
    expect(Object.getOwnPropertyDescriptor(cut, '__proto__')?.value).toEqual({ kept: true });
    let node = cut.tree;
    let level = 1;
    for (; Array.isArray(node); level++) node = node[0];
    expect([level, node]).toEqual([MAX_JSON_DEPTH, TOO_DEEP]);
  });

  it('cuts an object that contains itself, even twice over, and keeps one merely shared', () => {
    const shared = { n: 1 };
    const loop: Record<string, unknown> = { shared, again: shared };
    loop.left = loop;
    loop.right = { back: loop };
    const cut = withinDepth(loop) as Record<string, unknown>;
    expect(JSON.parse(JSON.stringify(cut))).toEqual({
      shared: { n: 1 },
      again: { n: 1 },
      left: CIRCULAR,
      right: { back: CIRCULAR },
    });
    expect(loop.left).toBe(loop);
  });

  it('walks a value far deeper than the stack would allow a recursive writer', () => {
    const depth = 100_000;
    const parsed = JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);
    expect(() => JSON.stringify(parsed)).toThrow(RangeError);
    expect(JSON.stringify(withinDepth(parsed)).length).toBeLessThan(2 * MAX_JSON_DEPTH + TOO_DEEP.length + 3);
  });
});
