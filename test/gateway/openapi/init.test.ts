/**
 * `idem init --openapi <file>` (the real CLI): a config with the document under http_tools_from
 * and each operation's suggested contract as a commented tools: line; it loads as written, and
 * uncommented, the suggestions are the operator's own (lint lists them as confirmed).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/gateway/config/index.js';
import { lintGateway } from '../../../src/gateway/lint.js';
import { runIdem } from '../../support/run-cli.js';
import { freshDir, removeTemporaries } from '../../support/temp-dirs.js';

afterAll(removeTemporaries);

const DOCUMENT = `
openapi: 3.1.0
info: { title: Orders, version: '1' }
servers: [{ url: 'https://api.orders.example' }]
paths:
  /orders/{order_id}:
    get:
      operationId: getOrder
      summary: Read an order.
      parameters: [{ name: order_id, in: path, required: true, schema: { type: string } }]
      responses: { '200': { description: ok } }
    put:
      operationId: replaceOrder
      parameters: [{ name: order_id, in: path, required: true, schema: { type: string } }]
      requestBody: { content: { application/json: { schema: { type: object } } } }
      responses: { '200': { description: ok } }
  /orders:
    post:
      operationId: createOrder
      parameters: [{ name: Idempotency-Key, in: header, schema: { type: string } }]
      requestBody: { content: { application/json: { schema: { type: object, properties: { order_id: { type: string } } } } } }
      responses: { '201': { description: ok } }
  /attachments:
    post:
      operationId: attach
      requestBody: { content: { multipart/form-data: { schema: { type: object } } } }
      responses: { '201': { description: ok } }
`;

describe('idem init --openapi', () => {
  it('writes the config with the suggestions as comments; uncommented, they are confirmed', async () => {
    const dir = freshDir('openapi-init');
    const document = join(dir, 'orders.yaml');
    writeFileSync(document, DOCUMENT);
    const output = join(dir, 'conf', 'idem.yaml');
    mkdirSync(join(dir, 'conf'));
    const result = await runIdem(['init', '--openapi', document, '--output', output], { dataDir: dir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`wrote ${output}: 3 operations as HTTP tools`);
    const text = readFileSync(output, 'utf8');
    expect(text).toContain('  - openapi: "../orders.yaml"');
    expect(text).toContain('#   getOrder: { replay: read_only }');
    expect(text).toContain('#   createOrder: { replay: keyed, scope: { business_key: body.order_id } }');
    expect(text).toContain('#   replaceOrder: { replay: review, scope: { business_key: order_id } }');
    expect(text).toContain('POST /attachments (attach): its request body is a multipart/form-data upload');

    // As written it loads, and every suggestion is an unconfirmed finding.
    const written = loadConfig(output);
    expect(written.http_tools_from?.[0]?.openapi).toBe(document);
    const before = await lintGateway(written, 'test');
    expect(
      before
        .filter((f) => f.settle?.startsWith('tools.'))
        .map((f) => f.tool)
        .sort(),
    ).toEqual(['createOrder', 'getOrder', 'replaceOrder']);

    // Uncommented (tools: and its lines), the same contracts are the operator's.
    writeFileSync(output, text.replace(/^# tools:$/m, 'tools:').replace(/^#( {3}\w+: \{ replay:)/gm, ' $1'));
    const after = await lintGateway(loadConfig(output), 'test');
    const tools = after.filter((f) => ['createOrder', 'getOrder', 'replaceOrder'].includes(f.tool));
    expect(tools).toHaveLength(3);
    for (const finding of tools) expect(finding.info).toBe(true);
    expect(after.map((f) => f.message).join('\n')).not.toContain('would refuse to start');
  });

  it('refuses a command and --openapi together', async () => {
    const dir = freshDir('openapi-init-both');
    const result = await runIdem(
      ['init', '--openapi', 'x.yaml', '--output', join(dir, 'o.yaml'), '--', 'node', 'server.js'],
      {
        dataDir: dir,
      },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('give either --openapi <file> or a command after --, not both');
  });
});
