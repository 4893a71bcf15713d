import { describe, expect, it } from 'vitest';
import { suggestedBusinessKey, suggestedContract } from './contracts.js';
import type { OpenApiDocument } from './document.js';
import { argumentNameOf, toolNameOf } from './names.js';
import { mapOperation } from './operations.js';
import { jsonSchemaOf } from './schema.js';
import { operationSelector } from './select.js';

const document = (extra: Partial<OpenApiDocument> = {}): OpenApiDocument => ({
  openapi: '3.0.3',
  servers: [{ url: 'https://{region}.api.example/v1', variables: { region: { default: 'eu' } } }],
  ...extra,
});

describe('names', () => {
  it('tool names keep to [A-Za-z0-9_-]{1,64}; long ones stay distinct', () => {
    expect(toolNameOf('issues/create', 'POST', '/x')).toBe('issues_create');
    expect(toolNameOf(undefined, 'GET', '/repos/{owner}/{repo}')).toBe('get_repos_owner_repo');
    const a = toolNameOf(`${'a'.repeat(70)}1`, 'GET', '/');
    const b = toolNameOf(`${'a'.repeat(70)}2`, 'GET', '/');
    expect(a).toHaveLength(64);
    expect(a).not.toBe(b);
    expect(argumentNameOf('X-Request-Id')).toBe('X_Request_Id');
    expect(argumentNameOf('2fa')).toBe('_2fa');
  });
});

describe('schemas', () => {
  it("OpenAPI 3.0's nullable and boolean exclusive bounds become JSON Schema; property names are left alone", () => {
    const schema = jsonSchemaOf(
      {
        type: 'object',
        properties: {
          example: { type: 'integer', minimum: 0, exclusiveMinimum: true, nullable: true, example: 3 },
          nullable: { type: 'string', enum: ['a'], nullable: true },
        },
      },
      true,
    );
    expect(schema).toEqual({
      type: 'object',
      properties: {
        example: { type: ['integer', 'null'], exclusiveMinimum: 0 },
        nullable: { type: ['string', 'null'], enum: ['a', null] },
      },
    });
  });

  it('a schema that contains itself is cut where it recurs', () => {
    const node: Record<string, unknown> = { type: 'object', properties: {} };
    (node.properties as Record<string, unknown>).child = node;
    const schema = jsonSchemaOf(node, false);
    expect(JSON.stringify(schema)).toContain('recursive');
  });
});

describe('include', () => {
  it('selects by operationId, tool name, tag and path glob, and names what selected nothing', () => {
    const select = operationSelector(['issues/create', 'tag:pulls', '/repos/*/*/hooks/**', 'nothing/here']);
    const op = (operationId: string, path: string, tags: string[] = []) => ({
      operationId,
      toolName: toolNameOf(operationId, 'GET', path),
      path,
      tags,
    });
    expect(select.selects(op('issues/create', '/repos/{o}/{r}/issues'))).toBe(true);
    expect(select.selects(op('pulls/list', '/repos/{o}/{r}/pulls', ['pulls']))).toBe(true);
    expect(select.selects(op('repos/get-webhook', '/repos/{o}/{r}/hooks/{id}/config'))).toBe(true);
    expect(select.selects(op('repos/get', '/repos/{o}/{r}'))).toBe(false);
    expect(select.unused()).toEqual(['nothing/here']);
  });
});

describe('an operation as an HTTP tool spec', () => {
  const entry = { openapi: 'x.yaml', credential: 'api' };

  it('server variables at their defaults, query and header parameters, the JSON body under body', () => {
    const mapped = mapOperation(
      'patch',
      '/things/{thing-id}',
      { parameters: [{ name: 'thing-id', in: 'path', required: true, schema: { type: 'string' } }] },
      {
        operationId: 'updateThing',
        parameters: [
          { name: 'dry_run', in: 'query', schema: { type: 'boolean' } },
          { name: 'X-Trace', in: 'header', required: true, schema: { type: 'string' } },
          { name: 'Accept', in: 'header', schema: { type: 'string' } },
        ],
        requestBody: {
          required: true,
          content: {
            'application/merge-patch+json': { schema: { type: 'object', properties: { name: {} } } },
          },
        },
      },
      { document: document(), entry },
    );
    expect(mapped).toMatchObject({
      kind: 'mapped',
      name: 'updateThing',
      suggestion: { replay: 'review' },
      businessKey: { path: 'thing_id' },
      spec: {
        method: 'PATCH',
        url: 'https://eu.api.example/v1/things/{thing_id}',
        query: { dry_run: '{dry_run}' },
        headers: { 'X-Trace': '{X_Trace}', 'Content-Type': 'application/merge-patch+json' },
        body: '{body}',
        credential: { name: 'api', scheme: 'bearer' },
        input_schema: { required: ['thing_id', 'X_Trace', 'body'], additionalProperties: false },
      },
    });
  });

  it('security schemes map to the one credential; what it cannot carry is skipped with the reason', () => {
    const secured = (scheme: Record<string, unknown>) =>
      mapOperation(
        'get',
        '/x',
        {},
        { operationId: 'x', security: [{ s: [] }] },
        {
          document: document({ components: { securitySchemes: { s: scheme as never } } }),
          entry: { ...entry, username: 'me' },
        },
      );
    expect(secured({ type: 'http', scheme: 'basic' })).toMatchObject({
      spec: { credential: { scheme: 'basic', username: 'me' } },
    });
    expect(secured({ type: 'apiKey', in: 'query', name: 'key' })).toMatchObject({
      spec: { credential: { scheme: 'query', param: 'key' } },
    });
    expect(secured({ type: 'oauth2' })).toMatchObject({ spec: { credential: { scheme: 'bearer' } } });
    expect(secured({ type: 'apiKey', in: 'cookie', name: 'sid' })).toMatchObject({
      kind: 'skipped',
      reason: expect.stringContaining('an API key in a cookie is not sent'),
    });
  });

  it('a relative server needs the override; a form body is skipped; a required object in the query too', () => {
    const relative = mapOperation(
      'get',
      '/x',
      {},
      {},
      { document: document({ servers: [{ url: '/api' }] }), entry },
    );
    expect(relative).toMatchObject({
      kind: 'skipped',
      reason: expect.stringContaining('server URL /api is not absolute'),
    });
    const overridden = mapOperation(
      'get',
      '/x',
      {},
      {},
      {
        document: document({ servers: [{ url: '/api' }] }),
        entry: { ...entry, server: 'http://127.0.0.1:9/base/' },
      },
    );
    expect(overridden).toMatchObject({ spec: { url: 'http://127.0.0.1:9/base/x' } });
    const form = mapOperation(
      'post',
      '/x',
      {},
      { requestBody: { content: { 'application/x-www-form-urlencoded': {} } } },
      { document: document(), entry },
    );
    expect(form).toMatchObject({
      kind: 'skipped',
      reason: expect.stringContaining('only JSON bodies are mapped'),
    });
    const filter = mapOperation(
      'get',
      '/x',
      {},
      {
        parameters: [
          { name: 'filter', in: 'query', required: true, style: 'deepObject', schema: { type: 'object' } },
        ],
      },
      { document: document(), entry },
    );
    expect(filter).toMatchObject({
      kind: 'skipped',
      reason: expect.stringContaining('query parameter filter'),
    });
  });
});

describe('contract suggestions', () => {
  it('GET/HEAD read, Idempotency-Key keyed, the rest review; a business key only where one argument names the object', () => {
    expect(suggestedContract('HEAD', undefined).replay).toBe('read_only');
    expect(suggestedContract('POST', 'Idempotency-Key').replay).toBe('keyed');
    expect(suggestedContract('PUT', undefined).replay).toBe('review');
    expect(suggestedBusinessKey('PUT', ['order_id'], []).path).toBe('order_id');
    expect(suggestedBusinessKey('DELETE', ['owner', 'repo'], []).path).toBeUndefined();
    expect(suggestedBusinessKey('POST', [], ['order_id', 'amount']).path).toBe('body.order_id');
    expect(suggestedBusinessKey('POST', [], ['a_id', 'b_id']).path).toBeUndefined();
  });
});
