import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { Gate } from '../../test/support/gate.js';
import { PATIENTLY } from '../../test/support/wait.js';
import type { ToolContract } from '../contracts/contract.js';
import { startSshd, type TestSshd } from '../demo/sshd.js';
import type { ResolveCredential } from '../dispatch/ssh/index.js';
import { idemCodeOf, META } from '../executions/answers.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { Idem, insideOf } from './idem.js';

let sshd: TestSshd;
beforeAll(async () => {
  sshd = await startSshd();
});
afterAll(() => sshd?.stop());

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let n = 0;
function scratch(): string {
  const dir = join(sshd.dir, `lib-${++n}`);
  mkdirSync(dir);
  return dir;
}

/**
 * An MCP server with one `deploy` SSH action tool on the test sshd. The command
 * appends to a counter file (the host is this machine: the test reads it), waits
 * for the gate file if the test made one, and prints what it deployed.
 */
async function deployServer(
  options: {
    contract?: Omit<ToolContract, 'status_probe'>;
    connectTimeoutMs?: number;
    resolveCredential?: ResolveCredential;
    /** Another "process" on the same store, data directory and host directory. */
    shareWith?: { dir: string; dataDir: string; idem: Idem };
  } = {},
) {
  const shared = options.shareWith;
  const dir = shared?.dir ?? scratch();
  const counter = join(dir, 'count');
  const gate = join(dir, 'gate');
  const dataDir = shared?.dataDir ?? mkdtempSync(join(tmpdir(), 'idem-ssh-lib-'));
  const store = (shared ? insideOf(shared.idem).runtime.store : undefined) ?? new MemoryStore();
  const idem = await Idem.open({ dataDir, store, maintenanceIntervalMs: 0 });
  const credentialsAsked: string[] = [];
  const newServer = () => {
    const server = new McpServer({ name: 'ssh-test', version: '1.0.0' });
    idem.sshTool(server, 'deploy', {
      description: 'Deploy a version of a service',
      inputSchema: { service: z.string(), version: z.string() },
      ...(options.contract ? { contract: options.contract } : {}),
      ssh: {
        host: {
          name: 'web-1',
          host: sshd.host,
          port: sshd.port,
          user: sshd.user,
          credential: 'deploy-key',
          hostKey: sshd.hostKeyFingerprint,
          markerDir: join(dir, 'markers'),
        },
        ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
        command:
          `echo {{service}} >> ${counter}; ` +
          `if [ -e ${gate}.wait ]; then while [ ! -e ${gate} ] && [ -d $(dirname ${gate}) ]; do sleep 0.05; done; fi; ` +
          'echo deployed {{service}} {{version}}',
      },
      resolveCredential: async (name: string) => {
        credentialsAsked.push(name);
        return options.resolveCredential ? options.resolveCredential(name) : sshd.privateKey;
      },
    });
    return server;
  };
  cleanups.push(async () => {
    await idem.close();
    if (!shared) rmSync(dataDir, { recursive: true, force: true });
  });
  const connect = async () => {
    const server = newServer();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await idem.connect(server, serverSide);
    const client = new Client({ name: 'ssh-test-agent', version: '1.0.0' });
    await client.connect(clientSide);
    cleanups.push(() => client.close());
    return client;
  };
  const runs = () => (existsSync(counter) ? readFileSync(counter, 'utf8').split('\n').filter(Boolean) : []);
  return { idem, connect, runs, gate, dir, dataDir, credentialsAsked, markers: join(dir, 'markers') };
}

const call = (client: Client, args: Record<string, unknown>) =>
  client.callTool({ name: 'deploy', arguments: args }) as Promise<CallToolResult>;
const text = (result: CallToolResult) => (result.content[0] as { text: string }).text;

describe('idem.sshTool at a real sshd', () => {
  it('concurrent identical calls run the command once; a repeat within the window gets the stored result', async () => {
    const { connect, runs, gate, credentialsAsked } = await deployServer();
    writeFileSync(`${gate}.wait`, '');
    const clients = await Promise.all([connect(), connect(), connect()]);
    const args = { service: 'api', version: '1.4.2' };
    const calls = clients.map((client) => call(client, args));
    const answers: CallToolResult[] = [];
    for (const pending of calls) void pending.then((a) => answers.push(a));
    // The two that lost the claim answer at once, while the command waits at the gate.
    await vi.waitFor(() => expect(answers.length === 2).toBe(true), PATIENTLY);
    expect(answers.map(idemCodeOf)).toEqual(['IDEM_IN_FLIGHT', 'IDEM_IN_FLIGHT']);
    writeFileSync(gate, '');
    const results = await Promise.all(calls);
    const done = results.find((r) => idemCodeOf(r) === undefined) as CallToolResult;
    expect(done.isError).toBeFalsy();
    expect(text(done)).toContain('deployed api 1.4.2');
    expect(runs()).toEqual(['api']);

    const repeat = await call(clients[0] as Client, args);
    expect(repeat._meta?.[META.replayed]).toBe(true);
    expect(repeat.structuredContent).toEqual(done.structuredContent);
    expect(runs()).toEqual(['api']);
    // The tool asked for its key by name; the value never appears in an answer.
    expect(credentialsAsked.every((name) => name === 'deploy-key')).toBe(true);
    for (const r of [...results, repeat]) expect(JSON.stringify(r)).not.toContain('PRIVATE KEY');
  });

  it('a hostile argument with a NUL byte is refused before anything is claimed or sent', async () => {
    const { idem, connect, runs } = await deployServer();
    const client = await connect();
    const refused = await call(client, { service: 'api\0; touch /tmp/pwned', version: '1' });
    expect(idemCodeOf(refused)).toBe('IDEM_INVALID_INPUT');
    expect(text(refused)).toContain('unsafe_argument: a NUL byte cannot be passed in a command (at service)');
    expect(await insideOf(idem).runtime.store.list()).toEqual([]);
    const quoted = await call(client, { service: '$(touch /tmp/pwned); `id`', version: "'1'" });
    expect(text(quoted)).toContain("deployed $(touch /tmp/pwned); `id` '1'");
    expect(runs()).toEqual(['$(touch /tmp/pwned); `id`']);
  });

  it('a timeout after sending answers IDEM_OUTCOME_UNKNOWN; the same call later reads the marker: the true outcome, no second run', async () => {
    const { connect, runs, gate, markers } = await deployServer({
      contract: { replay: 'keyed', timeout: '1s' },
    });
    writeFileSync(`${gate}.wait`, '');
    const client = await connect();
    const args = { service: 'worker', version: '7' };
    const first = await call(client, args);
    expect(idemCodeOf(first)).toBe('IDEM_OUTCOME_UNKNOWN');
    const ref = first._meta?.[META.executionId] as string;
    writeFileSync(gate, '');
    await vi.waitFor(() => expect(existsSync(join(markers, ref, 'exit'))).toBe(true), PATIENTLY);

    const again = await call(client, args);
    expect(idemCodeOf(again)).toBeUndefined();
    expect(again._meta?.[META.executionId]).toBe(ref);
    expect((again.content.at(-1) as { text: string }).text).toContain('deployed worker 7');
    expect(runs()).toEqual(['worker']);
  });

  it('unknown with no marker on the host (nothing had left yet): the same call runs it once; the late original then finds the marker', async () => {
    // First process: stuck before sending (its credential does not come), so the caller hears "unknown".
    const credentialGate = new Gate();
    const stuck = await deployServer({
      contract: { replay: 'keyed', timeout: '1s' },
      connectTimeoutMs: 60_000,
      resolveCredential: async () => {
        await credentialGate.wait();
        return sshd.privateKey;
      },
    });
    const args = { service: 'cron', version: '2' };
    const first = await call(await stuck.connect(), args);
    expect(idemCodeOf(first)).toBe('IDEM_OUTCOME_UNKNOWN');
    const ref = first._meta?.[META.executionId] as string;

    // Second process on the same store: the marker reads "none", so the keyed re-send runs the command.
    const other = await deployServer({
      contract: { replay: 'keyed', timeout: '30s' },
      shareWith: stuck,
    });
    const again = await call(await other.connect(), args);
    expect(idemCodeOf(again)).toBeUndefined();
    expect(again._meta?.[META.executionId]).toBe(ref);
    expect(text(again)).toContain('deployed cron 2');
    expect(stuck.runs()).toEqual(['cron']);

    // The first process finally sends the same execution id: the host refuses to start it again.
    const before = sshd.sessions().opened;
    credentialGate.open();
    await vi.waitFor(() => {
      const now = sshd.sessions();
      expect(now.opened > before && now.closed === now.opened).toBe(true);
    }, PATIENTLY);
    expect(stuck.runs()).toEqual(['cron']);
    expect((await insideOf(stuck.idem).runtime.store.get(ref))?.state).toBe('completed');
  });

  it('a command template that names an argument the schema lacks, or read_only, is refused when the tool is registered', async () => {
    const { idem } = await deployServer();
    const server = new McpServer({ name: 'x', version: '1' });
    const host = {
      name: 'web-1',
      host: sshd.host,
      user: sshd.user,
      credential: 'k',
      hostKey: sshd.hostKeyFingerprint,
    };
    expect(() =>
      idem.sshTool(server, 'restart', {
        inputSchema: { service: z.string() },
        ssh: {
          host,
          command: 'systemctl restart {{service}}@{{instance}}',
        },
        resolveCredential: async () => sshd.privateKey,
      }),
    ).toThrow(/uses \{\{instance\}\}, which inputSchema does not have/);
    expect(() =>
      idem.sshTool(server, 'peek', {
        inputSchema: { service: z.string() },
        contract: { replay: 'read_only' },
        ssh: {
          host,
          command: 'systemctl status {{service}}',
        },
        resolveCredential: async () => sshd.privateKey,
      }),
    ).toThrow(/read_only/);
  });
});
