/**
 * Issue 46.8, an OpenAPI import tried as a new user would: every request carries `User-Agent:
 * idem/<version>` and `Accept: application/json` (GitHub's API refuses a request without a
 * User-Agent) and the entry's fixed `headers:` (a `${NAME}` in one taken from the environment and
 * scrubbed like a credential); a large document gets an `include:` suggestion from `idem init
 * --openapi`; and a document validated once is not validated again at the next start.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { GatewayConfigSchema } from '../../../src/gateway/config/index.js';
import { Gateway } from '../../../src/gateway/gateway.js';
import { importHttpTools } from '../../../src/gateway/openapi/index.js';
import { ValidatedDocuments } from '../../../src/gateway/openapi/validated.js';
import { IDEM_VERSION } from '../../../src/support/package-version.js';
import { runIdem } from '../../support/run-cli.js';
import { freshDir, removeTemporaries } from '../../support/temp-dirs.js';
import { countingTarget } from './counting-target.js';

const TENANT_VARIABLE = 'DROPIN_TEST_TENANT_TOKEN';
const TENANT_TOKEN = 'tenant_5b8e1f0c93d2';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  delete process.env[TENANT_VARIABLE];
});
afterAll(removeTemporaries);

const ORDERS = `
openapi: 3.0.3
info: { title: Orders, version: '1' }
servers: [{ url: 'https://api.orders.example' }]
paths:
  /orders/{order_id}:
    get:
      operationId: getOrder
      parameters:
        - { name: order_id, in: path, required: true, schema: { type: string } }
        - { name: X-Api-Version, in: header, required: true, schema: { type: string } }
      responses: { '200': { description: ok } }
`;

/** A document of `n` operations over `tags` tags (GET /things{i}, tagged round-robin). */
function largeDocument(n: number, tags: number): string {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < n; i++)
    paths[`/things${i}/{id}`] = {
      get: {
        operationId: `getThing${i}`,
        tags: [`group${i % tags}`],
        // Reached through the components: a selection must keep what its operations refer to.
        parameters: [
          { $ref: '#/components/parameters/Id' },
          { $ref: `#/components/parameters/Filter${i % tags}` },
        ],
        responses: { '200': { description: 'ok' } },
      },
    };
  const parameters: Record<string, unknown> = {
    Id: { name: 'id', in: 'path', required: true, schema: { $ref: '#/components/schemas/Id' } },
  };
  const schemas: Record<string, unknown> = { Id: { type: 'string', minLength: 1 } };
  for (let t = 0; t < tags; t++) {
    parameters[`Filter${t}`] = {
      name: `filter${t}`,
      in: 'query',
      schema: { $ref: `#/components/schemas/Filter${t}` },
    };
    schemas[`Filter${t}`] = { type: 'string', enum: [`a${t}`, `b${t}`] };
  }
  return JSON.stringify({
    openapi: '3.1.0',
    info: { title: 'Things', version: '1' },
    servers: [{ url: 'https://api.things.example' }],
    paths,
    components: { parameters, schemas },
  });
}

describe('an imported tool talks to an API as a client should', () => {
  it('sends User-Agent idem/<version>, Accept application/json and the fixed headers; a fixed header from the environment is scrubbed like a credential', async () => {
    process.env[TENANT_VARIABLE] = TENANT_TOKEN;
    // The target echoes what it was sent, as a careless API might.
    const target = await countingTarget((request) => ({
      status: 200,
      body: { order: 'o-1', seen: request.headers['x-tenant-token'] },
    }));
    cleanups.push(target.close);
    const dir = freshDir('openapi-headers');
    const openapi = join(dir, 'orders.yaml');
    writeFileSync(openapi, ORDERS);
    const config = GatewayConfigSchema.parse({
      data_dir: dir,
      store: { kind: 'memory' },
      listen: { http: { host: '127.0.0.1', port: 0 } },
      http_tools_from: [
        {
          openapi,
          server: target.base,
          allow: { addresses: ['127.0.0.1'] },
          headers: { 'X-Api-Version': '2024-01-01', 'X-Tenant-Token': `\${${TENANT_VARIABLE}}` },
        },
      ],
    });
    const gateway = await Gateway.start(config, { version: 'test' });
    cleanups.push(() => gateway.close());
    const { url } = await gateway.serveHttp();
    const client = new Client({ name: 'openapi-headers-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    cleanups.push(() => client.close());

    const { tools } = await client.listTools();
    // The header the operator fixed is not asked of the model.
    expect(Object.keys(tools.find((t) => t.name === 'getOrder')?.inputSchema.properties ?? {})).toEqual([
      'order_id',
    ]);
    const result = (await client.callTool({
      name: 'getOrder',
      arguments: { order_id: 'o-1' },
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(target.requests).toHaveLength(1);
    const sent = target.requests[0]?.headers ?? {};
    expect(sent['user-agent']).toBe(`idem/${IDEM_VERSION}`);
    expect(sent.accept).toBe('application/json');
    expect(sent['x-api-version']).toBe('2024-01-01');
    expect(sent['x-tenant-token']).toBe(TENANT_TOKEN);
    // Echoed back, the value is a secret: scrubbed from the answer.
    expect(JSON.stringify(result)).not.toContain(TENANT_TOKEN);
    expect(result.structuredContent).toEqual({ status: 200, body: { order: 'o-1', seen: '[secret]' } });
  });
});

describe('a large document', () => {
  it('idem init --openapi suggests include:, in the file and on stderr', async () => {
    const dir = freshDir('openapi-large-init');
    const document = join(dir, 'things.json');
    writeFileSync(document, largeDocument(150, 4));
    const output = join(dir, 'idem.yaml');
    const result = await runIdem(['init', '--openapi', document, '--output', output], { dataDir: dir });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('150 operations is a lot for an agent');
    expect(result.stderr).toContain('include:');
    const text = readFileSync(output, 'utf8');
    expect(text).toContain('    # include:');
    expect(text).toContain('    #   - "tag:group0"   # 38 operations');
    expect(text).toContain('    #   - "tag:group3"   # 37 operations');
  }, 60_000);

  it('is validated once: the next start with the same bytes skips the validation, a changed document is validated again', async () => {
    const dir = freshDir('openapi-validated');
    const openapi = join(dir, 'things.json');
    writeFileSync(openapi, largeDocument(150, 4));
    const config = GatewayConfigSchema.parse({
      data_dir: dir,
      store: { kind: 'memory' },
      http_tools_from: [{ openapi, include: ['tag:group1'] }],
    });
    const remembered = () => new ValidatedDocuments(dir);
    const first = await importHttpTools(config, remembered());
    expect(first.imports[0]?.validation).toBe('done');
    expect(first.imports[0]?.tools).toHaveLength(38);
    const second = await importHttpTools(config, remembered());
    expect(second.imports[0]?.validation).toBe('remembered');
    // Only what the selection reads is resolved: its 38 path items and the components they reach.
    expect(first.imports[0]?.pathsRead).toBeUndefined();
    expect(second.imports[0]?.pathsRead).toEqual({ kept: 38, of: 150 });
    expect(second.config.http_tools).toEqual(first.config.http_tools);
    expect(second.config.http_tools?.getThing1?.input_schema).toMatchObject({
      properties: { id: { type: 'string', minLength: 1 }, filter1: { enum: ['a1', 'b1'] } },
    });
    writeFileSync(openapi, largeDocument(151, 4));
    expect((await importHttpTools(config, remembered())).imports[0]?.validation).toBe('done');

    // The gateway's start says which, on its log: a document it has not seen, then the same again.
    writeFileSync(openapi, largeDocument(152, 4));
    const said: string[] = [];
    const logger = { warn: () => {}, error: () => {}, info: (m: string) => said.push(m) };
    for (let i = 0; i < 2; i++) {
      const gateway = await Gateway.start(config, { version: 'test', logger });
      await gateway.close();
    }
    const lines = said.filter((m) => m.startsWith('http_tools_from[0]:'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^http_tools_from\[0\]: 38 operations of .* served as HTTP tools, 0 skipped \(\d+ ms\)$/,
    );
    expect(lines[1]).toMatch(/\(\d+ ms; validated by an earlier start; 38 of 152 paths read\)$/);
  }, 60_000);
});
