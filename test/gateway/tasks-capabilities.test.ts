import { ServerCapabilitiesV1Schema } from '@modelcontextprotocol/ext-tasks/core/v1';
import { hasTaskServerCapabilityV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENVELOPE } from '../../src/protocol/revisions.js';
import { TASKS_EXTENSION } from '../../src/protocol/tasks.js';
import { TASKS_UPSTREAM_PATH } from '../conformance/harness.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { REPO_ROOT } from '../support/node22.js';
import { MCP_HEADERS, messagesOf, rawRequest } from '../support/raw-http.js';
import { removeTemporaries } from '../support/temp-dirs.js';

/**
 * What the gateway says of tasks when a client asks what it serves: tasks are
 * Idem's own (its store backs them; an upstream's task is followed by the
 * gateway and never shown), so a 2025-era client's `initialize` gets the
 * gateway's `capabilities.tasks` in place of any upstream's, and a 2026-07-28
 * client's `server/discover` gets the extension and never `capabilities.tasks`.
 */

/** An upstream (the SDK's own server) that declares a narrower tasks capability than the gateway's: no list, no cancel. */
const NARROW_TASKS_UPSTREAM = {
  command: process.execPath,
  args: [
    '--input-type=module',
    '-e',
    `import { Server } from '@modelcontextprotocol/sdk/server/index.js';
     import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
     const capabilities = { tools: {}, tasks: { requests: { tools: { call: {} } } } };
     await new Server({ name: 'narrow-tasks', version: '1.0.0' }, { capabilities }).connect(new StdioServerTransport());`,
  ],
  cwd: REPO_ROOT,
};

/** The tasks scenarios' upstream: no tasks of its own at all. */
const TASKLESS_UPSTREAM = {
  command: process.execPath,
  args: [...fixtureArgs(TASKS_UPSTREAM_PATH), '--stdio'],
  cwd: REPO_ROOT,
};

const GATEWAY_TASKS = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

afterAll(() => removeTemporaries());

describe.each([
  ['stateful', false],
  ['stateless', true],
] as const)('the HTTP %s front', (_mode, stateless) => {
  describe.each([
    ['one upstream that declares narrower tasks', { narrow: NARROW_TASKS_UPSTREAM }],
    ['two upstreams, one without tasks', { narrow: NARROW_TASKS_UPSTREAM, taskless: TASKLESS_UPSTREAM }],
  ] as const)('in front of %s', (_upstreams, upstreams) => {
    let running: RunningGateway;

    beforeAll(async () => {
      running = await startHttpGateway({ upstreams, http: { stateless } });
    });
    afterAll(() => running?.close());

    it("2025-era initialize: the gateway's own tasks capability", async () => {
      const client = new Client({ name: 'tasks-capabilities', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(running.url)));
      try {
        const capabilities = client.getServerCapabilities();
        expect(capabilities?.tasks).toEqual(GATEWAY_TASKS);
        expect(ServerCapabilitiesV1Schema.parse(capabilities).tasks).toEqual(GATEWAY_TASKS);
      } finally {
        await client.close();
      }
    });

    it('2026-07-28 server/discover: the extension, and no capabilities.tasks', async () => {
      const response = await rawRequest(running.url, {
        headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'discover-1',
          method: 'server/discover',
          params: {
            _meta: { [ENVELOPE.protocolVersion]: '2026-07-28', [ENVELOPE.clientCapabilities]: {} },
          },
        }),
      });
      expect(response.status).toBe(200);
      const [reply] = messagesOf(response) as [{ result: { capabilities: Record<string, unknown> } }];
      const { capabilities } = reply.result;
      expect(capabilities.extensions).toEqual({ [TASKS_EXTENSION]: {} });
      expect(capabilities).not.toHaveProperty('tasks');
      expect(hasTaskServerCapabilityV2(capabilities)).toBe(true);
    });
  });
});
