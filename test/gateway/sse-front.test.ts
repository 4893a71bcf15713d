/**
 * Clients of the 2024-11-05 HTTP+SSE transport at the HTTP front (issue 46, `--sse`): the SDK's own
 * SSEClientTransport as the old client. Its effectful calls go through the same receipts and
 * engine (a resent request and a retried intent each run once); its session is its owner's alone;
 * Host, body limits and the default (off) are the Streamable front's. Real sockets and processes.
 */
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, startGatewayCli } from '../support/gateway-process.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { rawRequest } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';
import { executionsOf } from './fixtures/counting-server.js';

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  removeTemporaries();
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const replayed = (result: CallToolResult) => result._meta?.['io.idem/replayed'] === true;
const sseUrlOf = (streamableUrl: string) => new URL('sse', streamableUrl);

/** The answers to request `id` among the messages received. */
const answersTo = (received: JSONRPCMessage[], id: number) =>
  received.filter((m) => 'id' in m && m.id === id && ('result' in m || 'error' in m));

/**
 * A raw event stream: GET /sse, read until its `endpoint` event; the endpoint's URL (with the
 * session id) and how to leave.
 */
async function openStream(
  url: URL,
  headers: Record<string, string> = {},
): Promise<{ endpoint: string; close(): Promise<void> }> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  let match: RegExpExecArray | null = null;
  while (!match) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before its endpoint event: ${text}`);
    text += decoder.decode(value, { stream: true });
    match = /event: endpoint\ndata: (.*)\n\n/.exec(text);
  }
  const close = async () => {
    await reader.cancel().catch(() => {});
    controller.abort();
  };
  closers.push(close);
  return { endpoint: new URL(match[1] as string, url).href, close };
}

const initialize = (id: number) => ({
  jsonrpc: '2.0' as const,
  id,
  method: 'initialize',
  params: {
    protocolVersion: '2024-11-05',
    capabilities: {},
    clientInfo: { name: 'old-client', version: '1' },
  },
});

describe('an HTTP+SSE client at idem gateway --sse', () => {
  let gateway: GatewayProcess;
  const dir = freshDir('sse-front-counts');

  it('tools/list works; a call repeated after its answer runs once, and says it is a replay', async () => {
    const upstream = countingUpstream(dir);
    gateway = await startGatewayCli(
      ['--listen', '127.0.0.1:0', '--sse', '--', upstream.command, ...upstream.args],
      { env: { IDEM_DATA_DIR: freshDir('sse-front-gw') } },
    );
    closers.push(() => gateway.kill());
    // Said right after the Streamable HTTP line, which is what the start waited for.
    await vi.waitFor(
      () => expect(gateway.stderr()).toContain(`HTTP+SSE on ${sseUrlOf(gateway.url).href}`),
      PATIENTLY,
    );

    const client = new Client({ name: 'old-client', version: '1' });
    await client.connect(new SSEClientTransport(sseUrlOf(gateway.url)));
    closers.push(() => client.close());
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['count', 'read_count', 'idem_execution_status']),
    );
    const ran = (await client.callTool({ name: 'count', arguments: { key: 'order-7' } })) as CallToolResult;
    const again = (await client.callTool({ name: 'count', arguments: { key: 'order-7' } })) as CallToolResult;
    expect(ran.isError).toBeFalsy();
    expect(replayed(ran)).toBe(false);
    expect(replayed(again)).toBe(true);
    expect(again.structuredContent).toEqual(ran.structuredContent);
    expect(executionsOf(dir, 'order-7')).toBe(1);
  });

  it('the same request resent (same id, same content): answered from its receipt, run once', async () => {
    const transport = new SSEClientTransport(sseUrlOf(gateway.url));
    const received: JSONRPCMessage[] = [];
    transport.onmessage = (message) => received.push(message);
    await transport.start();
    closers.push(() => transport.close());
    await transport.send(initialize(1));
    await vi.waitFor(() => expect(answersTo(received, 1)).toHaveLength(1), PATIENTLY);
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });

    const call: JSONRPCMessage = {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'count', arguments: { key: 'resent' } },
    };
    await transport.send(call);
    await vi.waitFor(() => expect(answersTo(received, 2)).toHaveLength(1), PATIENTLY);
    // Its answer was lost on the way, as far as the client knows: it sends the very same request.
    await transport.send(call);
    await vi.waitFor(() => expect(answersTo(received, 2)).toHaveLength(2), PATIENTLY);
    const [first, second] = answersTo(received, 2);
    expect(second).toEqual(first);
    expect(executionsOf(dir, 'resent')).toBe(1);
  });
});

describe('HTTP+SSE sessions and checks', () => {
  const tokens = { alice: 'alice-token-0123456789', bob: 'bob-token-0123456789' };
  let gateway: RunningGateway;
  const dir = freshDir('sse-front-auth-counts');

  it('another actor cannot post to a session, nor an unauthenticated caller; its owner can', async () => {
    gateway = await startHttpGateway({
      upstreams: { counter: countingUpstream(dir) },
      http: { sse: true },
      auth: {
        bearer: [
          { token_sha256: sha256(tokens.alice), actor: 'alice' },
          { token_sha256: sha256(tokens.bob), actor: 'bob' },
        ],
      },
    });
    closers.push(() => gateway.close());
    const sse = sseUrlOf(gateway.url);
    const asAlice = { authorization: `Bearer ${tokens.alice}` };
    expect((await fetch(sse, { headers: { accept: 'text/event-stream' } })).status).toBe(401);

    const stream = await openStream(sse, asAlice);
    expect(stream.endpoint).toMatch(/\/messages\?sessionId=[0-9a-f-]{36}$/);
    const post = (headers: Record<string, string>) =>
      fetch(stream.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(initialize(1)),
      });
    const asBob = await post({ authorization: `Bearer ${tokens.bob}` });
    expect(asBob.status).toBe(404);
    expect(((await asBob.json()) as { error: { message: string } }).error.message).toBe('Session not found');
    expect((await post({})).status).toBe(401);
    expect((await post(asAlice)).status).toBe(202);
    await stream.close();
  });

  it('the SDK client with its token calls through; a body over the limit is 413; a foreign Host is 403', async () => {
    const client = new Client({ name: 'old-client', version: '1' });
    await client.connect(
      new SSEClientTransport(sseUrlOf(gateway.url), {
        requestInit: { headers: { authorization: `Bearer ${tokens.alice}` } },
      }),
    );
    closers.push(() => client.close());
    const ran = (await client.callTool({
      name: 'count',
      arguments: { key: 'with-token' },
    })) as CallToolResult;
    expect(ran.isError).toBeFalsy();
    expect(executionsOf(dir, 'with-token')).toBe(1);

    const stream = await openStream(sseUrlOf(gateway.url), { authorization: `Bearer ${tokens.alice}` });
    const oversize = await fetch(stream.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.alice}` },
      body: JSON.stringify({ ...initialize(1), padding: 'x'.repeat(5 * 1024 * 1024) }),
    });
    expect(oversize.status).toBe(413);
    await stream.close();

    const foreign = await rawRequest(sseUrlOf(gateway.url).href, {
      method: 'GET',
      headers: { host: 'evil.example', accept: 'text/event-stream', authorization: `Bearer ${tokens.alice}` },
    });
    expect(foreign.status).toBe(403);
  });

  it('needs sessions: with stateless the front refuses to start', async () => {
    const stateless = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: freshDir('sse-front-stateless'),
        upstreams: { counter: countingUpstream(dir) },
        listen: { http: { host: '127.0.0.1', port: 0, sse: true, stateless: true } },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    closers.push(() => stateless.close());
    await expect(stateless.serveHttp()).rejects.toThrow(
      /listen\.http\.sse .* cannot be combined with listen\.http\.stateless/,
    );
  });

  it('off by default: /sse and /messages are 404, as any unknown path', async () => {
    const plain = await startHttpGateway({ upstreams: { counter: countingUpstream(dir) } });
    closers.push(() => plain.close());
    expect((await fetch(sseUrlOf(plain.url), { headers: { accept: 'text/event-stream' } })).status).toBe(404);
    expect((await fetch(new URL('messages', plain.url), { method: 'POST' })).status).toBe(404);
  });
});
