/**
 * A fault of the gateway's own while it handles a request — here its store
 * throwing an error nothing before it maps (as a bug would) — is answered:
 * the client gets a JSON-RPC error instead of waiting for a reply nobody
 * sends, the error's text goes to the gateway's log (not to the client), and
 * the session goes on serving. The counting upstream is the far side of the boundary.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { internalErrorText } from '../../src/gateway/sessions/session.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { startHttpGateway } from '../support/http-gateway.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { executionsOf } from './fixtures/counting-server.js';

afterAll(removeTemporaries);

describe('a fault inside the gateway while it handles a request', () => {
  it('tools/call: answered with an internal error (not left unanswered); nothing ran; the session serves on', async () => {
    const counts = freshDir('internal-fault-counts');
    const logged: { message: string; fields?: Record<string, unknown> }[] = [];
    const gw = await startHttpGateway(
      {
        upstreams: { counter: countingUpstream(counts) },
        tools: { count: { replay: 'keyed', scope: { business_key: 'key' } } },
      },
      {
        logger: {
          warn: () => {},
          error: (message, fields) => logged.push({ message, ...(fields ? { fields } : {}) }),
        },
      },
    );
    const client = new Client({ name: 'fault-agent', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
      const store = gw.gateway.store;
      const claim = store.claim.bind(store);
      const detail = 'internal detail 7f3a: for the log, not the client';
      store.claim = async () => {
        throw new TypeError(`a bug in the store (${detail})`);
      };
      // Without an answer this would end in the client's own timeout (-32001), not -32603.
      const failed = await client
        .callTool({ name: 'count', arguments: { key: 'F1' } }, undefined, { timeout: 10_000 })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(failed).toBeInstanceOf(McpError);
      expect((failed as McpError).code).toBe(-32603);
      expect((failed as McpError).message).toContain(internalErrorText('tools/call'));
      expect((failed as McpError).message).not.toContain(detail);
      expect(executionsOf(counts, 'F1')).toBe(0);
      // The operator's log has what failed, and where.
      const line = logged.find((entry) => entry.fields?.method === 'tools/call');
      expect(String(line?.fields?.error)).toContain(`TypeError: a bug in the store (${detail})`);

      store.claim = claim;
      const served = (await client.callTool({ name: 'count', arguments: { key: 'F1' } })) as CallToolResult;
      expect(served.isError).toBeFalsy();
      expect(executionsOf(counts, 'F1')).toBe(1);
    } finally {
      await client.close();
      await gw.close();
    }
  }, 60_000);
});
