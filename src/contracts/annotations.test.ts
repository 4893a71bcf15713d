import { describe, expect, it } from 'vitest';
import { honestAnnotations } from './annotations.js';
import { resolveContract } from './contract.js';

describe('honestAnnotations', () => {
  it('keeps idempotentHint: true only where a declared contract replays after a result', () => {
    const keyed = resolveContract({ replay: 'keyed' }, undefined);
    expect(honestAnnotations({}, keyed, { contractDeclared: true })).toEqual({
      readOnlyHint: false,
      idempotentHint: true,
    });
    const fresh = resolveContract({ replay: 'keyed', after_completion: 'new' }, undefined);
    expect(
      honestAnnotations({ idempotentHint: true }, fresh, { contractDeclared: true })?.idempotentHint,
    ).toBe(false);
  });

  it('withdraws a claim that no declared contract backs', () => {
    const claimed = { idempotentHint: true, destructiveHint: true };
    const cautious = resolveContract(undefined, claimed);
    expect(honestAnnotations(claimed, cautious, { contractDeclared: false })).toEqual({
      idempotentHint: false,
      destructiveHint: true,
      readOnlyHint: false,
    });
  });

  it('called with two arguments, counts a contract resolved from nothing as undeclared', () => {
    expect(honestAnnotations({}, resolveContract(undefined, {}))?.idempotentHint).toBe(false);
    expect(honestAnnotations({}, resolveContract({ replay: 'keyed' }, {}))?.idempotentHint).toBe(true);
  });

  it('leaves a read-only tool as it was given', () => {
    const given = { readOnlyHint: true, title: 'Clock' };
    const readOnly = resolveContract(undefined, given);
    expect(honestAnnotations(given, readOnly, { contractDeclared: false })).toBe(given);
  });
});
