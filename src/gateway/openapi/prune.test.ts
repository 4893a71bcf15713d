import { describe, expect, it } from 'vitest';
import { pruneToSelection } from './prune.js';

const op = (ref: string) => ({ get: { responses: { '200': { $ref: ref } } } });
const api = () => ({
  openapi: '3.1.0',
  paths: { '/a': op('#/components/responses/A'), '/b': op('#/components/responses/B') },
  components: {
    responses: {
      A: {
        description: 'a',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Shared' } } },
      },
      B: {
        description: 'b',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/OnlyB' } } },
      },
    },
    schemas: {
      Shared: { type: 'object', properties: { next: { $ref: '#/components/schemas/Shared' } } },
      OnlyB: {},
    },
    securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'X-Key' } },
  },
});
const onlyA = (path: string) => path === '/a';

describe('what a selection needs of a document', () => {
  it('keeps the selected path items and the components they reach, transitively and through cycles', () => {
    const pruned = pruneToSelection(api(), onlyA);
    expect(pruned?.paths).toEqual({ kept: 1, of: 2 });
    expect(Object.keys(pruned?.api.paths as object)).toEqual(['/a']);
    const components = pruned?.api.components as Record<string, Record<string, unknown>>;
    expect(Object.keys(components.responses ?? {})).toEqual(['A']);
    expect(Object.keys(components.schemas ?? {})).toEqual(['Shared']);
    // Read by name, not by $ref: kept whole.
    expect(components.securitySchemes).toEqual(api().components.securitySchemes);
  });

  it('keeps what the rest of the document refers to (webhooks, extensions)', () => {
    const document = { ...api(), webhooks: { ping: op('#/components/responses/B') } };
    const components = pruneToSelection(document, onlyA)?.api.components as Record<
      string,
      Record<string, unknown>
    >;
    expect(Object.keys(components.schemas ?? {}).sort()).toEqual(['OnlyB', 'Shared']);
  });

  it('keeps the whole document where it cannot follow: another file, a pointer outside the components, a dangling one', () => {
    for (const ref of ['other.yaml#/components/schemas/X', '#/paths/~1b', '#/components/responses/Missing']) {
      const document = api();
      document.paths['/a'] = op(ref);
      expect(pruneToSelection(document, onlyA)).toBeUndefined();
    }
  });
});
