import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { honestAnnotations } from './annotations.js';
import { resolveContract } from './contract.js';

// The filesystem server's own annotations for two of its writing tools.
const WRITE_FILE = { readOnlyHint: false, idempotentHint: true, destructiveHint: true, openWorldHint: false };
const EDIT_FILE = { readOnlyHint: false, idempotentHint: false, destructiveHint: true, openWorldHint: false };

describe('honestAnnotations: one rule, whatever produced the contract', () => {
  it('publishes the same for a defaulted contract and a declared one with the same fields', () => {
    for (const given of [WRITE_FILE, EDIT_FILE, {}, undefined] as (ToolAnnotations | undefined)[]) {
      const defaulted = resolveContract(undefined, given);
      // What `idem init` writes for such a tool: the same replay class, now declared.
      const declared = resolveContract({ replay: defaulted.replay }, given);
      expect(declared.defaulted).toBe(false);
      expect(honestAnnotations(given, declared)).toEqual(honestAnnotations(given, defaulted));
    }
  });

  it("keeps the tool's own idempotentHint: true under an effectful contract", () => {
    expect(honestAnnotations(WRITE_FILE, resolveContract(undefined, WRITE_FILE))).toEqual(WRITE_FILE);
    for (const replay of ['review', 'keyed'] as const)
      expect(honestAnnotations({ idempotentHint: true }, resolveContract({ replay }, undefined))).toEqual({
        readOnlyHint: false,
        idempotentHint: true,
      });
  });

  it('publishes idempotentHint: false where the tool says false or nothing, whatever the contract', () => {
    expect(honestAnnotations(EDIT_FILE, resolveContract({ replay: 'review' }, EDIT_FILE))).toEqual(EDIT_FILE);
    for (const given of [undefined, {}, { destructiveHint: false }]) {
      for (const contract of [{ replay: 'keyed' as const }, { replay: 'review' as const }, undefined])
        expect(honestAnnotations(given, resolveContract(contract, given))).toEqual({
          ...given,
          readOnlyHint: false,
          idempotentHint: false,
        });
    }
  });

  it('is not changed by after_completion: new', () => {
    for (const given of [WRITE_FILE, EDIT_FILE, undefined]) {
      const replaying = resolveContract({ replay: 'keyed' }, given);
      const fresh = resolveContract({ replay: 'keyed', after_completion: 'new' }, given);
      expect(fresh.afterCompletion).toBe('new');
      expect(honestAnnotations(given, fresh)).toEqual(honestAnnotations(given, replaying));
    }
  });

  it('leaves a read_only tool as it was given, from its annotations or from a contract', () => {
    const given = { readOnlyHint: true, title: 'Clock' };
    expect(honestAnnotations(given, resolveContract(undefined, given))).toBe(given);
    const claimed = { idempotentHint: true, destructiveHint: false };
    expect(honestAnnotations(claimed, resolveContract({ replay: 'read_only' }, claimed))).toBe(claimed);
    expect(honestAnnotations(undefined, resolveContract({ replay: 'read_only' }, undefined))).toBeUndefined();
  });

  it('turns an upstream readOnlyHint: true into false under an effectful contract', () => {
    const given = { readOnlyHint: true, idempotentHint: true };
    expect(honestAnnotations(given, resolveContract({ replay: 'review' }, given))).toEqual({
      readOnlyHint: false,
      idempotentHint: true,
    });
  });
});
