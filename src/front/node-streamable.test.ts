import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { Gate } from '../../test/support/gate.js';
import { BoundedEventStore } from './event-store.js';
import { NodeStreamableTransport } from './node-streamable.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * One stateful session with an event store (so every POST's stream opens with
 * a priming event, as in Idem's stateful front) and an `echo` tool, on loopback.
 */
async function served(kind: 'idem' | 'sdk', gate?: Gate): Promise<{ url: string }> {
  const options = { sessionIdGenerator: () => randomUUID(), eventStore: new BoundedEventStore() };
  const transport =
    kind === 'idem' ? new NodeStreamableTransport(options) : new StreamableHTTPServerTransport(options);
  const mcp = new McpServer({ name: 'echo', version: '1.0.0' });
  mcp.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  // Holds until the test opens the gate.
  mcp.registerTool('slow', { inputSchema: {} }, async () => {
    await gate?.wait();
    return { content: [{ type: 'text', text: 'slow done' }] };
  });
  await mcp.connect(transport);
  const serve = (req: IncomingMessage, res: ServerResponse) =>
    transport instanceof NodeStreamableTransport
      ? transport.serve(req, res)
      : transport.handleRequest(req, res);
  const server: Server = createServer((req, res) => void serve(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    await mcp.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` };
}

/** Calls `echo` once and counts the zero-delay timers the HTTP adapter set meanwhile. */
async function adapterTimersDuringOneCall(url: string): Promise<{ timers: number; text: string }> {
  const client = new Client({ name: 'timer-count', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  cleanups.push(() => client.close());
  const original = globalThis.setTimeout;
  let timers = 0;
  vi.spyOn(globalThis, 'setTimeout').mockImplementation(((...args: Parameters<typeof setTimeout>) => {
    if (!args[1] && new Error().stack?.includes('@hono/node-server')) timers++;
    return original(...args);
  }) as typeof setTimeout);
  const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  vi.restoreAllMocks();
  return { timers, text: (result.content as { text: string }[])[0]?.text ?? '' };
}

const RAW_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
};

/** Initializes a session by hand (fetch, no SDK client); returns its id. */
async function rawSession(url: string): Promise<string> {
  const init = await fetch(url, {
    method: 'POST',
    headers: RAW_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  await init.text();
  return init.headers.get('mcp-session-id') as string;
}

function rawCall(url: string, session: string, id: number, name: string, args: Record<string, unknown>) {
  return fetch(url, {
    method: 'POST',
    headers: { ...RAW_HEADERS, 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
  });
}

describe('NodeStreamableTransport (the stateful front on Node http)', () => {
  it("answers a call on the POST's SSE stream with no timer between the answer and the client (the SDK's own Node transport waits one)", async () => {
    const sdk = await adapterTimersDuringOneCall((await served('sdk')).url);
    const idem = await adapterTimersDuringOneCall((await served('idem')).url);
    expect(sdk).toEqual({ timers: 1, text: 'hi' });
    expect(idem).toEqual({ timers: 0, text: 'hi' });
  });

  it('sends an SSE response chunked from its first byte: headers first, then each event as it comes', async () => {
    const { url } = await served('idem');
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    };
    const init = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    });
    await init.text();
    const session = init.headers.get('mcp-session-id') as string;
    const call = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': session },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'chunked' } },
      }),
    });
    expect(call.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(call.headers.get('transfer-encoding')).toBe('chunked');
    expect(call.headers.get('content-length')).toBeNull();
    const body = await call.text();
    // The priming event (an id to resume from), then the result.
    expect(body).toMatch(/^id: [^\n]+\n(retry: \d+\n)?data: \n\n/);
    expect(body).toContain('"text":"chunked"');
  });

  it('streams a slow call: headers and the priming event arrive while the tool still runs, the result when it ends', async () => {
    const gate = new Gate();
    const { url } = await served('idem', gate);
    const call = await rawCall(url, await rawSession(url), 2, 'slow', {});
    // The response has started (fetch resolved on its headers) while the tool is held.
    await gate.started;
    const reader = (call.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('\n\n')) text += decoder.decode((await reader.read()).value, { stream: true });
    expect(text).toMatch(/^id: [^\n]+\n(retry: \d+\n)?data: \n\n$/);
    gate.open();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value);
    expect(text).toContain('"text":"slow done"');
  });

  it('a client that leaves mid-call ends its stream; the session goes on serving', async () => {
    const gate = new Gate();
    const { url } = await served('idem', gate);
    const session = await rawSession(url);
    const call = await rawCall(url, session, 2, 'slow', {});
    await gate.started;
    await call.body?.cancel();
    gate.open();
    const next = await rawCall(url, session, 3, 'echo', { text: 'still here' });
    expect(next.status).toBe(200);
    expect(await next.text()).toContain('"text":"still here"');
  });
});
