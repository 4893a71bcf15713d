/**
 * A `keyed` HTTP action whose outcome is unknown is re-sent under the same key
 * when it is called again (docs/contracts.md). Found with issue 44, item 8: a
 * re-send that could not leave (the target refused the connection) was
 * recorded `failed` and retired, so the next call started a new execution —
 * a new key — and the target, which had received the first request, ran the
 * action twice. Now such a re-send leaves the outcome unknown, and the next
 * one carries the same key again.
 *
 * The gateway in process on loopback HTTP, the official SDK client, and a
 * target that holds its first request unanswered, then goes away, then comes
 * back on the same port, recording every Idempotency-Key it is sent.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../../src/executions/answers.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { removeTemporaries } from '../support/temp-dirs.js';
import { idemOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';

const keys: string[] = [];
const held: (() => void)[] = [];
let answering = false;

function target(port = 0): Promise<Server> {
  const server = createServer((req, res) => {
    keys.push(String(req.headers['idempotency-key']));
    req.resume();
    // Until told to answer, a request is held: sent and received, its outcome unknown to the caller.
    if (answering) res.end('{"charged":true}');
    else held.push(() => res.destroy());
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

async function stop(server: Server): Promise<void> {
  for (const release of held.splice(0)) release();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

let gateway: RunningGateway | undefined;
let client: Client | undefined;
let server: Server | undefined;
afterAll(async () => {
  await client?.close();
  await gateway?.close();
  if (server?.listening) await stop(server);
  removeTemporaries();
});

describe('a keyed HTTP action re-sent under its key', () => {
  it('that could not leave stays unknown, and the next re-send carries the same key: the target sees one key', async () => {
    server = await target();
    const port = (server.address() as AddressInfo).port;
    gateway = await startHttpGateway({
      upstreams: {},
      http_tools: {
        charge: {
          description: 'Charges once per key.',
          input_schema: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
          method: 'POST',
          url: `http://127.0.0.1:${port}/charge`,
          body: { order: '{order}' },
          allow: { addresses: ['127.0.0.1'] },
          contract: { replay: 'keyed', timeout: '1s' },
        },
      },
    } as unknown as Parameters<typeof startHttpGateway>[0]);
    client = new Client({ name: 'resending-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    const call = async () =>
      (await client?.callTool({ name: 'charge', arguments: { order: 'R-1' } })) as CallToolResult;

    // Sent and received, never answered: unknown.
    const first = await call();
    expect(idemCodeOf(first)).toBe('IDEM_OUTCOME_UNKNOWN');
    const ref = idemOf(first)?.ref as string;
    expect(keys).toEqual([ref]);

    // The target goes away: the re-send cannot leave. The first request may still have acted.
    await stop(server);
    await vi.waitFor(
      async () => expect((await gateway?.gateway.store.get(ref))?.state).toBe('unknown'),
      PATIENTLY,
    );
    const resent = await call();
    expect(idemCodeOf(resent)).toBe('IDEM_OUTCOME_UNKNOWN');
    expect(idemOf(resent)?.ref).toBe(ref);
    expect((await gateway.gateway.store.get(ref))?.state).toBe('unknown');

    // Back, and answering: the next call re-sends under the same key, and gets the answer.
    answering = true;
    server = await target(port);
    const answered = await call();
    expect(answered.isError).toBeFalsy();
    expect(new Set(keys)).toEqual(new Set([ref]));
    expect(keys).toHaveLength(2);
  }, 60_000);
});
