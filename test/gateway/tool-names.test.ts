/**
 * Tool names in the config must name published tools (issue 25 item 2,
 * DESIGN §5). With two upstreams every tool is published as
 * <upstream>__<tool>; a config written for one upstream (`charge_card`) still
 * names it, and an entry that names nothing stops the gateway instead of
 * leaving the tool unprotected. Real authorization server, real upstream
 * processes, real HTTP and stdio.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { fixtureStdioCommand } from '../conformance/harness.js';
import { startAuthorizationServer } from '../support/authorization-server.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { startHttpGateway } from '../support/http-gateway.js';
import { idemCommand } from '../support/idem-cli.js';
import { messagesOf, rawSession } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { executionsOf } from './fixtures/counting-server.js';

afterAll(removeTemporaries);

const call = (id: number, key: string, name = 'pay__count') => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: { key } },
});

describe('a scope named by the upstream’s own tool name, with two upstreams', () => {
  const counts = freshDir('names-counts');
  let as: Awaited<ReturnType<typeof startAuthorizationServer>>;
  let gateway: Gateway;
  let url: string;

  beforeAll(async () => {
    as = await startAuthorizationServer([
      { id: 'agent', secret: 'agent-secret', scopes: ['idem:mcp', 'payments:write'] },
    ]);
    gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: freshDir('names-gw'),
        listen: { http: { host: '127.0.0.1', port: 0 } },
        upstreams: { pay: countingUpstream(counts), files: fixtureStdioCommand() },
        auth: {
          oauth: {
            issuers: [{ issuer: as.issuer }],
            algorithms: ['ES256'],
            scopes: ['idem:mcp'],
            // Written when `pay` was the only upstream and its tool was published as `count`.
            tool_scopes: { count: ['payments:write'] },
          },
        },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    ({ url } = await gateway.serveHttp());
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await as?.close();
  });

  it('a token with only idem:mcp is refused pay__count (403); one with the scope runs it', async () => {
    const narrow = await as.token('agent', { resource: url, scope: 'idem:mcp' });
    const session = await rawSession(url, 'narrow', { authorization: `Bearer ${narrow}` });
    const names = (
      (await session.call({ id: 1, method: 'tools/list' })).result as { tools: { name: string }[] }
    ).tools.map((t) => t.name);
    expect(names).toContain('pay__count');
    const refused = await session.post(call(2, 'charge-1'));
    expect(refused.status).toBe(403);
    expect(String(refused.headers['www-authenticate'])).toContain('scope="idem:mcp payments:write"');
    expect(executionsOf(counts, 'charge-1')).toBe(0);

    const full = await as.token('agent', { resource: url, scope: 'idem:mcp payments:write' });
    const allowed = await rawSession(url, 'full', { authorization: `Bearer ${full}` });
    const ran = await allowed.call(call(3, 'charge-1'));
    expect((ran.result as CallToolResult).structuredContent).toMatchObject({ key: 'charge-1', value: 1 });
    // The other upstream's tools need no more than the base scope.
    const other = await session.post(call(4, 'x', 'files__test_simple_text'));
    expect(other.status).toBe(200);
    expect(messagesOf(other)[0]).toHaveProperty('result');
  });
});

describe('contracts and approvals named by the upstream’s own tool name, with two upstreams', () => {
  it('a contract under the bare name applies to the prefixed tool', async () => {
    const counts = freshDir('names-contract');
    const running = await startHttpGateway({
      upstreams: { pay: countingUpstream(counts), files: fixtureStdioCommand() },
      // read_only: every call runs. Ignored, the annotations' default would replay the second call.
      tools: { count: { replay: 'read_only' } },
    });
    try {
      const session = await rawSession(running.url, 'agent');
      await session.call(call(1, 'k'));
      await session.call(call(2, 'k'));
      expect(executionsOf(counts, 'k')).toBe(2);
    } finally {
      await running.close();
    }
  });

  it('an approval naming no published tool stops the gateway: the call is denied and nothing runs', async () => {
    const counts = freshDir('names-typo');
    const faults: string[] = [];
    const running = await startHttpGateway(
      {
        upstreams: { pay: countingUpstream(counts), files: fixtureStdioCommand() },
        tools: { cuont: { replay: 'keyed', approval: 'every_call' } },
      },
      { onConfigFault: (error) => faults.push(error.message) },
    );
    try {
      const session = await rawSession(running.url, 'agent');
      const denied = (await session.call(call(1, 'typo'))).result as CallToolResult;
      expect(denied.structuredContent).toMatchObject({ idem: { code: 'IDEM_DENIED' } });
      const text = (denied.content[0] as { text: string }).text;
      expect(text).toContain('tools.cuont: no published tool is named "cuont"');
      expect(text).toContain('did you mean pay__count?');
      expect(executionsOf(counts, 'typo')).toBe(0);
      expect(faults).toEqual([expect.stringContaining('so the gateway runs no tool until that is fixed')]);
      const list = await session.call({ id: 2, method: 'tools/list' });
      expect(list.error).toMatchObject({ code: -32603, message: expect.stringContaining('tools.cuont') });
    } finally {
      await running.close();
    }
  });
});

describe('idem gateway over stdio', () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child?.exitCode === null) child.kill('SIGKILL');
  });

  it('a contract naming no published tool stops it at the first listing, exit 2, the entry named', async () => {
    const dir = freshDir('names-cli');
    const counts = join(dir, 'counts');
    mkdirSync(counts);
    const path = join(dir, 'idem.yaml');
    writeFileSync(
      path,
      JSON.stringify({
        data_dir: join(dir, 'data'),
        upstreams: { pay: countingUpstream(counts) },
        tools: { charge: { replay: 'keyed', scope: { business_key: 'key' } } },
      }),
    );
    const cli = idemCommand(['gateway', '--config', path]);
    const proc = spawn(cli.command, cli.args, { cwd: cli.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    child = proc;
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    proc.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    const send = (message: unknown) => proc.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    await vi.waitFor(() => expect(stdout).toContain('"id":1'), { timeout: 60_000, interval: 50 });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(await exited).toBe(2);
    expect(stderr).toContain('tools.charge: no published tool is named "charge"');
    expect(stderr).toContain('Published: count, read_count.');
  }, 90_000);
});
