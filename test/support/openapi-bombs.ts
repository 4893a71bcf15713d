/**
 * Hostile OpenAPI documents (issue 44 item 2), each a few KB, that cost a loader without bounds
 * seconds to minutes and gigabytes: what test/gateway/openapi/bounds.test.ts and
 * scripts/openapi-bombs.ts feed to the gateway.
 */

/**
 * A valid OpenAPI 3.1 document around `components` and `extra` (top-level `x-` members), with
 * `operations` operations whose body refers to `bodyRef` (`createThing`, `createThing1`, …); with
 * more than one, each has a query parameter of its own, so no two input schemas are the same (the
 * gateway compiles a schema it has seen once).
 */
function documentWith(
  bodyRef: string | undefined,
  schemas: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  operations = 1,
) {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < operations; i++)
    paths[i === 0 ? '/things' : `/things${i}`] = {
      post: {
        operationId: i === 0 ? 'createThing' : `createThing${i}`,
        ...(operations > 1
          ? { parameters: [{ name: `q${i}`, in: 'query', schema: { type: 'string' } }] }
          : {}),
        ...(bodyRef
          ? {
              requestBody: {
                required: true,
                content: { 'application/json': { schema: { $ref: bodyRef } } },
              },
            }
          : {}),
        responses: { '200': { description: 'ok' } },
      },
    };
  return {
    openapi: '3.1.0',
    info: { title: 'bomb', version: '1' },
    servers: [{ url: 'https://bomb.example/v1' }],
    paths,
    components: { schemas },
    ...extra,
  };
}

/**
 * `$ref` fan-out: schema S0 has `width` properties that each refer to S1, S1 `width` that refer
 * to S2, … down `levels` levels: `width ** levels` copies of the last schema once every `$ref`
 * is replaced by what it names, from about 2 KB of JSON (10 × 10: ten billion); in the body of
 * `operations` operations.
 */
export function refFanOut(levels: number, width = 10, operations = 1): string {
  const schemas: Record<string, unknown> = {};
  for (let level = 0; level < levels; level++) {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < width; i++) properties[`p${i}`] = { $ref: `#/components/schemas/S${level + 1}` };
    schemas[`S${level}`] = { type: 'object', properties };
  }
  schemas[`S${levels}`] = { type: 'string' };
  return JSON.stringify(documentWith('#/components/schemas/S0', schemas, {}, operations));
}

/**
 * A chain of `length` schemas, each with one property that refers to the next: shallow as
 * written, `length` levels deep once the `$ref`s are replaced.
 */
export function refChain(length: number): string {
  const schemas: Record<string, unknown> = {};
  for (let i = 0; i < length; i++)
    schemas[`C${i}`] = { type: 'object', properties: { next: { $ref: `#/components/schemas/C${i + 1}` } } };
  schemas[`C${length}`] = { type: 'string' };
  return JSON.stringify(documentWith('#/components/schemas/C0', schemas));
}

/**
 * YAML's "billion laughs": anchors of `width` aliases of the anchor before, `levels` deep, in an
 * `x-` extension the OpenAPI schema allows anywhere: about 1 KB, `width ** levels` strings once
 * expanded (9 × 10: a billion).
 */
export function yamlAliasBomb(levels = 9, width = 10): string {
  const lines = ['openapi: 3.1.0', 'info: { title: bomb, version: "1" }', 'paths: {}', 'x-bomb:'];
  lines.push(`  l0: &l0 [${Array.from({ length: width }, () => '"lol"').join(', ')}]`);
  for (let level = 1; level <= levels; level++)
    lines.push(
      `  l${level}: &l${level} [${Array.from({ length: width }, () => `*l${level - 1}`).join(', ')}]`,
    );
  return `${lines.join('\n')}\n`;
}

/** A document nested `depth` levels in an `x-` extension (arrays in arrays): it parses, and is `depth` deep. */
export function deepNesting(depth: number): string {
  const nested = `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const document = JSON.stringify(documentWith(undefined, {}));
  return `${document.slice(0, -1)},"x-deep":${nested}}`;
}

/** A document whose description is padded to `bytes` bytes: valid, only large. */
export function largeDocument(bytes: number): string {
  const document = documentWith(undefined, {});
  const base = JSON.stringify({ ...document, info: { ...document.info, description: '' } }).length;
  return JSON.stringify({
    ...document,
    info: { ...document.info, description: 'x'.repeat(Math.max(0, bytes - base)) },
  });
}

/**
 * `size` schemas that each refer to every one of them: circular, so swagger-parser leaves the
 * `$ref`s that close a circle as they are, but a copy that follows every path until one repeats
 * holds every ordering of them (12: hundreds of millions).
 */
export function refMesh(size: number): string {
  const schemas: Record<string, unknown> = {};
  for (let i = 0; i < size; i++) {
    const properties: Record<string, unknown> = {};
    for (let j = 0; j < size; j++) properties[`m${j}`] = { $ref: `#/components/schemas/M${j}` };
    schemas[`M${i}`] = { type: 'object', properties };
  }
  return JSON.stringify(documentWith('#/components/schemas/M0', schemas));
}
