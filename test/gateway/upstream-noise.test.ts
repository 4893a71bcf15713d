import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { IDEM_CLI } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

/**
 * Issue 26.1: a line on an upstream's stdout that is not JSON-RPC (a banner,
 * a console.log in a handler) is logged and skipped — it is not a lost
 * upstream, and the call it came with is answered as the upstream answered it.
 */
const NOISY = join(REPO_ROOT, 'test/gateway/fixtures/noisy-server.ts');
const noisy = (dir: string) => ({
  command: process.execPath,
  args: [...fixtureArgs(NOISY), '--dir', dir],
});
const lines = (dir: string, file: string) =>
  existsSync(join(dir, file)) ? readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean) : [];

const running: RunningGateway[] = [];
const clients: Client[] = [];
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  for (const gateway of running) await gateway.close();
  removeTemporaries();
});

describe('an upstream that writes other things on stdout', () => {
  it('its banner and console.log lines are skipped and logged; the call completes once, the upstream is not restarted', async () => {
    const dir = freshDir('noisy');
    const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
    const at = (level: string) => (message: string, fields?: Record<string, unknown>) =>
      logged.push({ level, message, ...(fields ? { fields } : {}) });
    const gateway = await startHttpGateway(
      {
        upstreams: { invoices: { ...noisy(dir), cwd: REPO_ROOT } },
        tools: { create_invoice: { replay: 'review', scope: { business_key: 'customer' } } },
      },
      { logger: { warn: at('warn'), error: at('error'), info: at('info') } },
    );
    running.push(gateway);
    const client = new Client({ name: 'agent', version: '1' });
    clients.push(client);
    // The banner comes before the initialize answer: the handshake must get past it.
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));

    const result = (await client.callTool({
      name: 'create_invoice',
      arguments: { customer: 'acme', echo: `tail ${'z'.repeat(5000)}` },
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'invoice for acme' }]);
    const [execution] = await gateway.gateway.store.list({ tool: 'create_invoice' });
    expect(execution?.state).toBe('completed');
    expect(lines(dir, 'effects.log')).toEqual(['acme']);
    // One start for the session (a process started ahead for a next session says nothing until taken).
    expect(logged.filter((l) => l.message.startsWith('upstream invoices started'))).toHaveLength(1);

    const skipped = logged.filter((l) => l.message.includes('skipped it'));
    expect(skipped.map((l) => [l.level, l.fields?.line])).toEqual([
      ['warn', 'noisy-invoices v1.0 ready — listening on stdio'],
      ['warn', "created invoice for { customer: 'acme' }"],
      ['warn', '{"debug":"invoice stored","customer":"acme"}'],
      ['warn', `tail ${'z'.repeat(195)}…`],
    ]);
    expect(skipped[0]?.message).toBe('upstream invoices wrote a line on stdout that is not JSON; skipped it');
    expect(skipped[2]?.message).toContain('JSON but not a JSON-RPC message');
    expect(skipped[3]?.fields?.bytes).toBe(5005);
    expect(logged.filter((l) => /went down|restarting/.test(l.message))).toEqual([]);
  }, 60_000);

  it('through the CLI on stdio (`idem gateway -- <server>`): initialize succeeds past the banner, stderr says what was skipped', async () => {
    const dir = freshDir('noisy-cli');
    let stderr = '';
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [IDEM_CLI, 'gateway', '--', ...Object.values(noisy(dir)).flat()],
      cwd: REPO_ROOT,
      env: { ...(process.env as Record<string, string>), IDEM_DATA_DIR: freshDir('noisy-cli-data') },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const client = new Client({ name: 'agent', version: '1' });
    clients.push(client);
    await client.connect(transport);
    const result = (await client.callTool({
      name: 'create_invoice',
      arguments: { customer: 'globex' },
    })) as CallToolResult;
    expect(result.content).toEqual([{ type: 'text', text: 'invoice for globex' }]);
    expect(stderr).toContain(
      'idem gateway: warn: upstream noisy-server wrote a line on stdout that is not JSON; skipped it',
    );
    expect(stderr).toContain('noisy-invoices v1.0 ready');
    expect(stderr).toContain("created invoice for { customer: 'globex' }");
    expect(stderr).toMatch(/idem gateway: upstream noisy-server started \(pid \d+\)/);
  }, 60_000);
});
