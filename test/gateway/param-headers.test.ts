import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedFixture, serveFixtureHttp } from '../conformance/fixture-http.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { MCP_HEADERS, messagesOf, rawRequest } from '../support/raw-http.js';
import { removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';

/**
 * `Mcp-Param-*` headers (SEP-2243) through the gateway: the fixture's
 * `test_param_header` marks `region` with `x-mcp-header: Region`, and the
 * fixture (the v2 SDK's `createMcpHandler`) refuses a call whose header does
 * not match. The gateway checks what its client sends, and sends its own to
 * the upstream.
 */

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

afterAll(() => removeTemporaries());

describe.each([
  ['stateful', false],
  ['stateless', true],
] as const)('Mcp-Param-* headers through the HTTP %s front', (_mode, stateless) => {
  let upstream: ServedFixture;
  let running: RunningGateway;

  beforeAll(async () => {
    upstream = await serveFixtureHttp({ port: 0 });
    running = await startHttpGateway({ upstreams: { fixture: { url: upstream.url } }, http: { stateless } });
  });

  afterAll(async () => {
    await running?.close();
    await upstream?.close();
  });

  it('the v2 client pinned to 2026-07-28: its headers pass, and the upstream accepts the gateway’s', async () => {
    const client = new Client(
      { name: 'param-headers', version: '1.0.0' },
      { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(running.url)));
    try {
      // Plain ASCII goes as it is; anything else in Base64, both from the client and from the gateway.
      for (const region of ['eu-west', 'Zürich'])
        expect(textOf(await client.callTool({ name: 'test_param_header', arguments: { region } }))).toBe(
          `region: ${region}`,
        );
    } finally {
      await client.close();
    }
  });

  it.each([
    ['a missing header', {}],
    ['a header that says something else', { 'mcp-param-region': 'us-east' }],
    ['a malformed Base64 value', { 'mcp-param-region': '=?base64?SGVsbG8?=' }],
  ])('%s: 400 with -32020 and the request id, nothing recorded', async (_what, extra) => {
    const response = await rawRequest(running.url, {
      headers: {
        ...MCP_HEADERS,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'test_param_header',
        ...extra,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'param-1',
        method: 'tools/call',
        params: { name: 'test_param_header', arguments: { region: 'Hello' }, _meta: ENVELOPE },
      }),
    });
    expect(response.status).toBe(400);
    expect(messagesOf(response)[0]).toMatchObject({ id: 'param-1', error: { code: -32020 } });
    expect(await running.gateway.store.list({ tool: 'test_param_header' })).toHaveLength(
      // The v2 client's two calls above, and nothing from these.
      2,
    );
  });
});
