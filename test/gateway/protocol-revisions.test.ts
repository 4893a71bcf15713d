import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { CLIENT_KINDS, type ClientKind, type ClientTarget, connectClient } from '../support/clients.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { idemCommand } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';
import { MCP_HEADERS, messagesOf, rawRequest } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { idemOf, textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';
import { executionsOf } from './fixtures/counting-server.js';

/**
 * Both revisions through every front, towards upstreams of either: MCP
 * 2026-07-28 (no initialize, no sessions, an envelope on every request) and
 * the 2025-era revisions (initialize, sessions). Clients by others: the v2
 * SDK client pinned to 2026-07-28, in auto mode and in its default (2025)
 * mode, and an SDK 1.10 client, which asks for 2024-11-05.
 */

const COUNTING_2026 = join(REPO_ROOT, 'test/gateway/fixtures/counting-server-2026.ts');

/** The 2026-07-28-only counting server (it refuses initialize) as a stdio command. */
function counting2026Upstream(dir: string) {
  return {
    command: process.execPath,
    args: [...fixtureArgs(COUNTING_2026), '--dir', dir],
    cwd: REPO_ROOT,
  };
}

/** A client of the shared matrix (test/support/clients.ts), with the counting `count` tool at hand. */
async function connect(kind: ClientKind, target: ClientTarget) {
  const client = await connectClient(kind, target);
  return {
    version: client.protocolVersion,
    call: (args: Record<string, unknown>, signal?: AbortSignal) =>
      client.callTool('count', args, signal ? { signal } : {}),
    toolNames: () => client.listTools(),
    close: () => client.close(),
  };
}

afterAll(() => removeTemporaries());

/** The answer to a retry of a call whose outcome cannot be known: it says so (never "failed"). */
function expectUnknown(answer: unknown): void {
  const idem = idemOf(answer);
  expect(idem?.state).toBe('unknown');
  // Which of the two depends on the tool's contract: a tool that is not idempotent needs a human's look.
  expect(['IDEM_OUTCOME_UNKNOWN', 'IDEM_REVIEW_REQUIRED']).toContain(idem?.code);
}

describe.each([
  ['stateful', false],
  ['stateless', true],
] as const)('HTTP front (%s)', (_mode, stateless) => {
  describe.each([
    ['a 2025-era upstream', countingUpstream],
    ['a 2026-07-28-only upstream', counting2026Upstream],
  ] as const)('in front of %s', (_upstream, upstreamOf) => {
    const counts = freshDir('revisions-counts');
    let running: RunningGateway;

    it.each(CLIENT_KINDS)(
      '%s: connects, lists, calls; the same call again attaches to its execution',
      async (kind) => {
        running ??= await startHttpGateway({
          upstreams: { counter: upstreamOf(counts) },
          http: { stateless },
        });
        const client = await connect(kind, { url: running.url });
        try {
          expect(client.version).toBe(
            kind === 'v2-2026' || kind === 'v2-auto'
              ? '2026-07-28'
              : kind === 'sdk-1.10'
                ? '2024-11-05'
                : '2025-11-25',
          );
          expect(await client.toolNames()).toEqual(
            expect.arrayContaining(['count', 'idem_execution_status']),
          );
          const key = `${kind}-${stateless}`;
          const first = await client.call({ key });
          expect(textOf(first)).toBe(`${key}=1`);
          // A re-issued call (a new request id, as a client of either revision sends after a lost
          // answer) attaches to the execution: the stored result, said to be one, nothing run twice.
          const again = (await client.call({ key })) as { _meta?: Record<string, unknown> };
          expect(textOf(again)).toBe(`${key}=1`);
          expect(again._meta?.['io.idem/replayed']).toBe(true);
          expect(executionsOf(counts, key)).toBe(1);
        } finally {
          await client.close();
        }
      },
    );

    it('a 2026-07-28 client that closes the stream after dispatch has cancelled: the outcome is unknown, never failed', async () => {
      running ??= await startHttpGateway({ upstreams: { counter: upstreamOf(counts) }, http: { stateless } });
      const client = await connect('v2-2026', { url: running.url });
      const key = `cancelled-${stateless}-${upstreamOf.name}`;
      const aborted = new AbortController();
      const call = client.call({ key, hold_file: `${key}.release` }, aborted.signal).catch((e: unknown) => e);
      await vi.waitFor(
        () => expect(executionsOf(counts, key), 'the upstream ran the call').toBe(1),
        PATIENTLY,
      );
      aborted.abort();
      expect(await call).toBeInstanceOf(Error);
      await vi.waitFor(
        async () =>
          expect(
            (await running.gateway.store.list({ state: 'unknown', tool: 'count' })).length,
            'the cancellation reached the gateway',
          ).toBe(1),
        PATIENTLY,
      );
      // The same call again: the gateway cannot know whether it finished, and says so.
      expectUnknown(await client.call({ key, hold_file: `${key}.release` }));
      writeFileSync(join(counts, `${key}.release`), '');
      expect(executionsOf(counts, key)).toBe(1);
      await client.close();
    });

    afterAll(async () => {
      await running?.close();
    });
  });
});

describe('HTTP front in front of a 2026-07-28-only upstream over HTTP', () => {
  it.each(['v2-2026', 'sdk-1.10'] as const)('%s: connects, lists, calls once', async (kind) => {
    const counts = freshDir('revisions-http-up');
    const { spawn } = await import('node:child_process');
    const upstream = spawn(process.execPath, [...fixtureArgs(COUNTING_2026), '--dir', counts, '--http'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const upstreamUrl = await new Promise<string>((resolve, reject) => {
        upstream.stdout?.on('data', (chunk: Buffer) => {
          const match = /http:\/\/\S+/.exec(chunk.toString());
          if (match) resolve(match[0]);
        });
        upstream.once('exit', (code) => reject(new Error(`upstream exited with ${code}`)));
      });
      const running = await startHttpGateway({ upstreams: { counter: { url: upstreamUrl } } });
      try {
        const client = await connect(kind, { url: running.url });
        expect(await client.toolNames()).toContain('count');
        expect(textOf(await client.call({ key: kind }))).toBe(`${kind}=1`);
        expect(textOf(await client.call({ key: kind }))).toBe(`${kind}=1`);
        expect(executionsOf(counts, kind)).toBe(1);
        await client.close();
      } finally {
        await running.close();
      }
    } finally {
      upstream.kill();
    }
  });
});

describe('stdio front (the gateway as its client launches it)', () => {
  it.each([
    ['v2-2026', 'a 2026-07-28-only upstream'],
    ['v2-auto', 'a 2026-07-28-only upstream'],
    ['v2-legacy', 'a 2026-07-28-only upstream'],
    ['v2-2026', 'a 2025-era upstream'],
  ] as const)(
    '%s in front of %s: connects, lists, calls once; a cancelled call after dispatch is unknown',
    async (kind, upstream) => {
      const counts = freshDir('revisions-stdio');
      const data = freshDir('revisions-stdio-data');
      const up = upstream === 'a 2025-era upstream' ? countingUpstream(counts) : counting2026Upstream(counts);
      const gateway = idemCommand(['gateway', '--', up.command, ...up.args]);
      const connected = await connect(kind, {
        command: gateway.command,
        args: gateway.args,
        cwd: gateway.cwd,
        env: { ...(process.env as Record<string, string>), IDEM_DATA_DIR: data },
      });
      try {
        expect(connected.version).toBe(kind === 'v2-legacy' ? '2025-11-25' : '2026-07-28');
        expect(await connected.toolNames()).toContain('count');
        expect(textOf(await connected.call({ key: 'once' }))).toBe('once=1');
        expect(textOf(await connected.call({ key: 'once' }))).toBe('once=1');
        expect(executionsOf(counts, 'once')).toBe(1);

        const aborted = new AbortController();
        const call = connected
          .call({ key: 'held', hold_file: 'held.release' }, aborted.signal)
          .catch((e: unknown) => e);
        await vi.waitFor(
          () => expect(executionsOf(counts, 'held'), 'the upstream ran the call').toBe(1),
          PATIENTLY,
        );
        aborted.abort();
        expect(await call).toBeInstanceOf(Error);
        const store = await openStore({ kind: 'sqlite', path: join(data, 'idem.db') });
        try {
          await vi.waitFor(
            async () =>
              expect(
                (await store.list({ state: 'unknown', tool: 'count' })).length,
                'the cancellation reached the gateway',
              ).toBe(1),
            PATIENTLY,
          );
        } finally {
          await store.close();
        }
        expectUnknown(await connected.call({ key: 'held', hold_file: 'held.release' }));
        writeFileSync(join(counts, 'held.release'), '');
        expect(executionsOf(counts, 'held')).toBe(1);
      } finally {
        await connected.close();
      }
    },
  );
});

describe('refusals keep the request id, in both revisions', () => {
  const counts = freshDir('revisions-refusals');
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const modernHeaders = { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
  const cases: [string, Record<string, string>, unknown, number, number][] = [
    [
      'Accept without text/event-stream',
      { 'content-type': 'application/json', accept: 'application/json' },
      { method: 'tools/list' },
      406,
      -32000,
    ],
    [
      'a Content-Type that is not JSON',
      { ...MCP_HEADERS, 'content-type': 'text/plain' },
      { method: 'tools/list' },
      415,
      -32000,
    ],
    [
      'a 2025-era revision the gateway does not speak',
      { ...MCP_HEADERS, 'mcp-protocol-version': '2023-01-01' },
      { method: 'tools/list' },
      400,
      -32000,
    ],
    [
      'a 2026-07-28 request without its standard headers',
      MCP_HEADERS,
      { method: 'tools/list', params: { _meta: envelope } },
      400,
      -32020,
    ],
    [
      'a 2026-07-28 request whose Mcp-Method disagrees with the body',
      { ...modernHeaders, 'mcp-method': 'prompts/list' },
      { method: 'tools/list', params: { _meta: envelope } },
      400,
      -32020,
    ],
    [
      'a 2026-07-28 tools/call whose Mcp-Name names another tool (nothing is recorded or run)',
      { ...modernHeaders, 'mcp-method': 'tools/call', 'mcp-name': 'other_tool' },
      { method: 'tools/call', params: { name: 'count', arguments: { key: 'misnamed' }, _meta: envelope } },
      400,
      -32020,
    ],
    [
      'a 2026-07-28 tasks/get whose Mcp-Name names another task',
      { ...modernHeaders, 'mcp-method': 'tasks/get', 'mcp-name': 'tsk_other' },
      { method: 'tasks/get', params: { taskId: 'tsk_asked', _meta: envelope } },
      400,
      -32020,
    ],
    [
      'a 2026-07-28 tasks/cancel without Mcp-Name',
      { ...modernHeaders, 'mcp-method': 'tasks/cancel' },
      { method: 'tasks/cancel', params: { taskId: 'tsk_asked', _meta: envelope } },
      400,
      -32020,
    ],
    [
      'a modern revision the gateway does not serve',
      { ...modernHeaders, 'mcp-protocol-version': '2099-01-01' },
      {
        method: 'tools/list',
        params: { _meta: { ...envelope, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
      },
      400,
      -32022,
    ],
  ];
  for (const stateless of [false, true]) {
    it.each(cases)(
      `${stateless ? 'stateless' : 'stateful'}: %s`,
      async (_what, headers, message, status, code) => {
        const running = await startHttpGateway({
          upstreams: { counter: countingUpstream(counts) },
          http: { stateless },
        });
        try {
          const response = await rawRequest(running.url, {
            headers,
            body: JSON.stringify({ jsonrpc: '2.0', id: 'req-41', ...(message as object) }),
          });
          expect(response.status).toBe(status);
          const [reply] = messagesOf(response);
          expect(reply).toMatchObject({ id: 'req-41', error: { code } });
          expect(await running.gateway.store.list({ tool: 'count' })).toEqual([]);
        } finally {
          await running.close();
        }
      },
    );
  }
});

describe('a 2026-07-28 request the gateway cannot serve', () => {
  it('an upstream that will not start: 503 with the request id, nothing recorded, safe to retry', async () => {
    const running = await startHttpGateway({
      upstreams: { broken: { command: process.execPath, args: ['-e', 'process.exit(3)'] } },
    });
    try {
      const response = await rawRequest(running.url, {
        headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'req-77',
          method: 'tools/list',
          params: {
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      });
      expect(response.status).toBe(503);
      expect(messagesOf(response)[0]).toMatchObject({ id: 'req-77', error: { code: -32603 } });
      expect(await running.gateway.store.list({})).toEqual([]);
    } finally {
      await running.close();
    }
  });
});
