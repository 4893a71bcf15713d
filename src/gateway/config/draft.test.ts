import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { draftConfig } from './draft.js';

describe('draftConfig', () => {
  it('keeps a description to one comment line: a newline in it cannot become config', () => {
    const text = draftConfig({ name: 'srv', command: 'srv', args: [] }, [
      {
        name: 'get x',
        description: 'Gets x.\ntools: { evil: { replay: read_only } }',
        inputSchema: { type: 'object' },
      },
    ]);
    expect(parse(text)).toEqual({
      upstreams: { srv: { command: 'srv', args: [] } },
      tools: { 'get x': { replay: 'read_only' } },
    });
  });

  it('says the published-annotations rule once, and promises no idempotentHint the rule would not publish', () => {
    const text = draftConfig({ name: 'fs', command: 'fs', args: [] }, [
      {
        name: 'edit_file',
        inputSchema: { type: 'object' },
        annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: true },
      },
      { name: 'read_file', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
    ]);
    expect(text).toContain(
      "# any other is published readOnlyHint: false with the server's own idempotentHint (none given: false).",
    );
    expect(text).not.toContain('idempotentHint: true');
    expect(text).toContain(
      'edit_file: { replay: review } # guess — confirm: the upstream marks it as having effects',
    );
  });
});
