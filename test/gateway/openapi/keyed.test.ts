/**
 * A small OpenAPI document whose create operation declares an Idempotency-Key header parameter:
 * imported as `keyed`, Idem's execution id goes in that header, and a call that timed out is
 * re-sent under the same key (the target acts once). Beside it, what the import cannot map is
 * skipped with its reason at start, a document that does not parse stops the gateway naming the
 * file and the pointer, and `idem lint` lists every imported tool with its contract and why.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { idemCodeOf } from '../../../src/executions/answers.js';
import { GatewayConfigSchema } from '../../../src/gateway/config/index.js';
import { Gateway } from '../../../src/gateway/gateway.js';
import { lintGateway } from '../../../src/gateway/lint.js';
import { freshDir, removeTemporaries } from '../../support/temp-dirs.js';
import { type Answer, countingTarget } from './counting-target.js';

const API_KEY = 'pk_loopback_only_5f3a';

const PAYMENTS = `
openapi: 3.0.3
info: { title: Payments, version: '1' }
servers: [{ url: 'https://api.payments.example/v1' }]
security: [{ key: [] }]
components:
  securitySchemes:
    key: { type: apiKey, in: header, name: X-Api-Key }
  schemas:
    Charge:
      type: object
      required: [amount_cents]
      properties:
        amount_cents: { type: integer, minimum: 1 }
        currency: { type: string, default: EUR }
        note: { type: string, nullable: true }
paths:
  /orders/{order_id}/charges:
    parameters:
      - { name: order_id, in: path, required: true, schema: { type: string } }
    post:
      operationId: createCharge
      summary: Charge an order.
      parameters:
        - { name: Idempotency-Key, in: header, required: true, schema: { type: string } }
        - { name: X-Request-Source, in: header, schema: { type: string } }
      requestBody:
        required: true
        content: { application/json: { schema: { $ref: '#/components/schemas/Charge' } } }
      responses: { '201': { description: charged } }
  /orders/{order_id}:
    get:
      operationId: getOrder
      parameters:
        - { name: order_id, in: path, required: true, schema: { type: string } }
        - { name: expand, in: query, schema: { type: array, items: { type: string } } }
      responses: { '200': { description: the order } }
    delete:
      operationId: cancelOrder
      parameters:
        - { name: order_id, in: path, required: true, schema: { type: string } }
      responses: { '204': { description: cancelled } }
  /receipts:
    post:
      operationId: uploadReceipt
      requestBody:
        content: { multipart/form-data: { schema: { type: object, properties: { file: { type: string, format: binary } } } } }
      responses: { '201': { description: stored } }
`;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(removeTemporaries);

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

function files(prefix: string, document = PAYMENTS) {
  const dir = freshDir(prefix);
  const openapi = join(dir, 'payments.yaml');
  writeFileSync(openapi, document);
  const keyFile = join(dir, 'payments.key');
  writeFileSync(keyFile, `${API_KEY}\n`);
  chmodSync(keyFile, 0o600);
  return { dir, openapi, keyFile };
}

describe('an OpenAPI operation that declares Idempotency-Key', () => {
  it('is keyed: the execution id goes in that header, and a timed-out call is re-sent under the same key, acted on once', async () => {
    // The target honours keys: a repeat of a key gets the first answer, whenever it comes.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const charges = new Map<string, Promise<Answer>>();
    const target = await countingTarget((request) => {
      if (request.method !== 'POST') return { status: 200, body: { order: 'o-1' } };
      const key = String(request.headers['idempotency-key']);
      let answer = charges.get(key);
      if (!answer) {
        answer = held.then(() => ({
          status: 201,
          body: { charge: `ch_${charges.size}`, ...(request.body as object) },
        }));
        charges.set(key, answer);
      }
      return answer;
    });
    cleanups.push(target.close);
    const { dir, openapi, keyFile } = files('openapi-keyed');
    const said: string[] = [];
    const logger = {
      warn: (m: string) => said.push(m),
      error: (m: string) => said.push(m),
      info: (m: string) => said.push(m),
    };
    const config = GatewayConfigSchema.parse({
      data_dir: dir,
      store: { kind: 'memory' },
      listen: { http: { host: '127.0.0.1', port: 0 } },
      credentials: { payments: { file: keyFile } },
      http_tools_from: [
        {
          openapi,
          credential: 'payments',
          server: target.base,
          allow: { addresses: ['127.0.0.1'] },
          timeout: 300,
        },
      ],
    });
    const gateway = await Gateway.start(config, { version: 'test', logger });
    cleanups.push(() => gateway.close());
    const { url } = await gateway.serveHttp();
    const client = new Client({ name: 'openapi-keyed-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    cleanups.push(() => client.close());

    // What cannot be mapped is said at start, with its reason.
    expect(said).toContain(
      `http_tools_from[0]: skipped POST /receipts (uploadReceipt): its request body is a multipart/form-data upload; only JSON bodies are mapped`,
    );
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'cancelOrder',
      'createCharge',
      'getOrder',
      'idem_execution_status',
    ]);
    const create = tools.find((t) => t.name === 'createCharge');
    // keyed makes a retry safe; a deliberate repeat charges again, and the document says nothing more.
    expect(create?.annotations).toEqual({ readOnlyHint: false, idempotentHint: false });
    // Idem fills Idempotency-Key and the API key: neither is an argument.
    expect(Object.keys(create?.inputSchema.properties ?? {})).toEqual([
      'order_id',
      'X_Request_Source',
      'body',
    ]);

    const args = { order_id: 'o-1', X_Request_Source: 'agent', body: { amount_cents: 1500 } };
    const first = await call(client, 'createCharge', args);
    expect(idemCodeOf(first)).toBe('IDEM_OUTCOME_UNKNOWN');
    expect(JSON.stringify(first)).toContain('No full answer within 300 ms');
    release();
    const recovered = await call(client, 'createCharge', args);
    expect(recovered.isError).toBeFalsy();
    expect(recovered.structuredContent).toEqual({
      status: 201,
      body: { charge: 'ch_1', amount_cents: 1500, currency: 'EUR' },
    });
    const posts = target.requests.filter((r) => r.method === 'POST');
    expect(posts).toHaveLength(2);
    expect(posts[1]?.headers['idempotency-key']).toBe(posts[0]?.headers['idempotency-key']);
    expect(charges.size).toBe(1);
    for (const post of posts) {
      expect(post.url).toBe('/orders/o-1/charges');
      expect(post.headers['x-api-key']).toBe(API_KEY);
      expect(post.headers['x-request-source']).toBe('agent');
      // The schema's default filled in, as for any tool's arguments.
      expect(post.body).toEqual({ amount_cents: 1500, currency: 'EUR' });
    }

    // A read: no key; the array query parameter repeated; an optional header left out when not given.
    const read = await call(client, 'getOrder', { order_id: 'o-1', expand: ['lines', 'payer'] });
    expect(read.structuredContent).toEqual({ status: 200, body: { order: 'o-1' } });
    const get = target.requests.find((r) => r.method === 'GET');
    expect(get?.url).toBe('/orders/o-1?expand=lines&expand=payer');
    expect(get?.headers['idempotency-key']).toBeUndefined();
    expect(get?.headers['x-api-key']).toBe(API_KEY);
  });

  it('idem lint lists every imported tool with its contract and why; tools.<name> overrides the suggestion', async () => {
    const { dir, openapi, keyFile } = files('openapi-lint');
    const config = GatewayConfigSchema.parse({
      data_dir: dir,
      store: { kind: 'memory' },
      credentials: { payments: { file: keyFile } },
      http_tools_from: [{ openapi, credential: 'payments' }],
      tools: { cancelOrder: { replay: 'review', scope: { business_key: 'order_id' } } },
    });
    const findings = await lintGateway(config, 'test');
    const byTool = Object.fromEntries(findings.map((f) => [f.tool, f]));
    expect(byTool.createCharge?.message).toContain(
      `createCharge: imported from ${openapi} (POST /orders/{order_id}/charges): replay: keyed, POST: the operation declares the Idempotency-Key header, which carries Idem's execution id.`,
    );
    expect(byTool.createCharge?.message).toContain('No business key offered: no argument names the object');
    expect(byTool.createCharge?.settle).toBe('tools.createCharge: { replay: keyed }');
    expect(byTool.getOrder?.message).toContain("replay: read_only, GET: the document's method only reads");
    expect(byTool.cancelOrder).toMatchObject({ info: true });
    expect(byTool.cancelOrder?.message).toContain('replay: review, declared under tools.cancelOrder');
    expect(byTool.uploadReceipt?.message).toContain('POST /receipts of');
    expect(byTool.uploadReceipt?.message).toContain('multipart/form-data upload');

    // Without the override, the DELETE's one path parameter is offered as the business key, not applied.
    const plain = await lintGateway(GatewayConfigSchema.parse({ ...config, tools: undefined }), 'test');
    const cancel = plain.find((f) => f.tool === 'cancelOrder');
    expect(cancel?.message).toContain(
      'replay: review, DELETE: may act, and the operation declares no Idempotency-Key header',
    );
    expect(cancel?.message).toContain('Business key offered: order_id');
    expect(cancel?.settle).toBe('tools.cancelOrder: { replay: review, scope: { business_key: order_id } }');
  });

  it('a document that does not parse, or does not resolve, stops the gateway naming the file and the JSON pointer', async () => {
    const broken = PAYMENTS.replace(
      "$ref: '#/components/schemas/Charge'",
      "$ref: '#/components/schemas/Nope'",
    );
    const invalid = PAYMENTS.replace(
      'in: path, required: true, schema: { type: string } }\n    post',
      'in: paht, required: true, schema: { type: string } }\n    post',
    );
    const cases: Array<[string, RegExp]> = [
      [
        broken,
        /does not resolve: at #\/paths\/~1orders~1\{order_id\}~1charges\/post\/requestBody\/content\/application~1json\/schema: Missing \$ref pointer/,
      ],
      [
        invalid,
        /is not a valid OpenAPI document: at #\/paths\/~1orders~1\{order_id\}~1charges\/parameters\/0/,
      ],
      ['openapi: 3.0.3\ninfo: { title: t\n', /does not parse: .*\(3:1\)/],
    ];
    for (const [document, message] of cases) {
      const { dir, openapi } = files('openapi-broken', document);
      const config = GatewayConfigSchema.parse({
        data_dir: dir,
        store: { kind: 'memory' },
        http_tools_from: [{ openapi }],
      });
      const started = Gateway.start(config, { version: 'test' });
      await expect(started).rejects.toBeInstanceOf(ConfigError);
      await expect(started).rejects.toThrow(`http_tools_from[0]: ${openapi} `);
      await expect(started).rejects.toThrow(message);
    }
  });
});
