import { describe, expect, it } from 'vitest';
import { ENVELOPE } from './revisions.js';
import { TASKS_EXTENSION } from './tasks.js';
import { forUpstream, metaForUpstream } from './upstream-params.js';

describe('what a client request keeps on its way upstream', () => {
  it("loses a client's task, the tasks extension it declares and Idem's own _meta; keeps the rest as it came", () => {
    const params = {
      name: 'greet',
      arguments: { name: 'Ada' },
      task: { ttl: 60_000 },
      _meta: {
        progressToken: 7,
        'io.idem/execution-id': 'exe_the_clients_own',
        [ENVELOPE.clientCapabilities]: {
          elicitation: { form: {} },
          extensions: { [TASKS_EXTENSION]: {}, 'example.org/other': { on: true } },
        },
        [ENVELOPE.protocolVersion]: '2026-07-28',
      },
    };
    expect(forUpstream(params)).toEqual({
      name: 'greet',
      arguments: { name: 'Ada' },
      _meta: {
        progressToken: 7,
        [ENVELOPE.clientCapabilities]: {
          elicitation: { form: {} },
          extensions: { 'example.org/other': { on: true } },
        },
        [ENVELOPE.protocolVersion]: '2026-07-28',
      },
    });
  });

  it('is the same object when there is nothing to take off', () => {
    const params = { name: 'greet', arguments: {}, _meta: { progressToken: 1 } };
    expect(forUpstream(params)).toBe(params);
    expect(metaForUpstream(params._meta)).toBe(params._meta);
    expect(forUpstream(undefined)).toBeUndefined();
    expect(metaForUpstream(undefined)).toBeUndefined();
  });
});
