import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { META } from '../executions/answers.js';
import { Idem, insideOf } from './idem.js';

/**
 * Secrets a handler echoes back, through the library on its default SQLite
 * store: the caller that sent them gets the handler's answer; the stored
 * outcome and every replay of it do not hold them.
 */
const TOKEN = 'ghp_R4nd0mT0k3nV4lu3';
const PASSPHRASE = 'correct horse battery staple';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function deployServer() {
  const dataDir = mkdtempSync(join(tmpdir(), 'idem-lib-secrets-'));
  const idem = await Idem.open({ dataDir, maintenanceIntervalMs: 0 });
  const server = new McpServer({ name: 'deployer', version: '1.0.0' });
  const inputSchema = {
    service: z.string(),
    // Secret by the schema (writeOnly) ...
    registry_token: z.string().meta({ writeOnly: true }),
    // ... and by the contract.
    signing: z.object({ passphrase: z.string() }),
  };
  const contract = { replay: 'keyed' as const, fingerprint: { secrets: ['signing.passphrase'] } };
  idem.tool(server, 'deploy', { inputSchema, contract }, async (args) => {
    const echo = { service: args.service, auth: `Bearer ${args.registry_token}`, signing: args.signing };
    // The handler clears what it consumed: what was sent is still what gets redacted.
    args.signing.passphrase = '';
    return {
      content: [{ type: 'text', text: `deployed ${args.service} with ${args.registry_token}` }],
      structuredContent: { echo: structuredClone({ ...echo, signing: { passphrase: PASSPHRASE } }) },
    };
  });
  // Failures kept (after_failure: replay), so that the stored one is handed back again.
  const keepsFailures = { ...contract, after_failure: 'replay' as const };
  idem.tool(server, 'deploy_broken', { inputSchema, contract: keepsFailures }, async (args) => {
    throw new Error(
      `registry refused token ${args.registry_token} (passphrase "${args.signing.passphrase}")`,
    );
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await idem.connect(server, serverSide);
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(async () => {
    await client.close();
    await idem.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { idem, client };
}

const args = { service: 'api', registry_token: TOKEN, signing: { passphrase: PASSPHRASE } };

function expectNoSecret(value: unknown): void {
  const text = JSON.stringify(value);
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain(PASSPHRASE);
}

describe('secrets a handler echoes back', () => {
  it('are in the live answer, not in the stored outcome nor its replay', async () => {
    const { idem, client } = await deployServer();
    const live = (await client.callTool({ name: 'deploy', arguments: args })) as CallToolResult;
    expect(JSON.stringify(live)).toContain(TOKEN);
    expect(JSON.stringify(live)).toContain(PASSPHRASE);
    const ref = live._meta?.[META.executionId] as string;

    const stored = await insideOf(idem).runtime.store.get(ref);
    expectNoSecret(stored);
    expect(stored?.outcome?.result.structuredContent).toEqual({
      echo: { service: 'api', auth: 'Bearer [secret]', signing: { passphrase: '[secret]' } },
    });

    const replay = (await client.callTool({ name: 'deploy', arguments: args })) as CallToolResult;
    expect(replay._meta?.[META.replayed]).toBe(true);
    expectNoSecret(replay);
    // The note that says it is a replay, then the original content, redacted.
    expect(replay.content?.[1]).toEqual({ type: 'text', text: 'deployed api with [secret]' });
    expect(replay.content).toHaveLength(2);
    expect((replay.content[0] as { text: string }).text).toMatch(/^\[idem\] Replayed, not run again/);
  });

  it('are not kept from a thrown error message', async () => {
    const { idem, client } = await deployServer();
    const live = (await client.callTool({ name: 'deploy_broken', arguments: args })) as CallToolResult;
    expect(live.isError).toBe(true);
    const ref = live._meta?.[META.executionId] as string;
    const stored = await insideOf(idem).runtime.store.get(ref);
    expect(stored?.state).toBe('failed');
    expectNoSecret(stored);
    expect(JSON.stringify(stored?.outcome)).toContain('registry refused token [secret] (passphrase');

    const replay = (await client.callTool({ name: 'deploy_broken', arguments: args })) as CallToolResult;
    expect(replay.isError).toBe(true);
    expect(replay._meta?.[META.replayed]).toBe(true);
    expectNoSecret(replay);
  });
});
