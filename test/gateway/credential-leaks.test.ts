/**
 * Issue 44, item 1: a credential Idem holds reaches no stdio upstream it was
 * not configured for, and whatever an upstream sends is scrubbed of every
 * configured credential on every path, from the first call of a process.
 *
 * `idem gateway` (the CLI, its own process) holds two credentials: `k1` from
 * the variable PROC_KEY and `k2` from a 0600 file. The upstream
 * (fixtures/leaky-server.ts) repeats the first secret it can get — PROC_KEY if
 * it inherited it, else the file, which its user can read — on every path an
 * upstream has: results, errors, progress, logs, elicitation and sampling
 * requests, an upstream task's status and result, resources, prompts, stderr
 * and stdout. A second upstream is handed PROC_KEY on purpose
 * (`env: {HANDED: '${PROC_KEY}'}`). No action tool ever resolves a
 * credential: what the process knows it learned at start. What the client
 * received, `idem.db` and its WAL, `idem executions show`, the journal export
 * and the gateway's stderr are searched, in a first process and in a second
 * one on the same data directory (whose status tool replays the first's).
 */
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { META } from '../../src/executions/answers.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';

const LEAKY = join(REPO_ROOT, 'test/gateway/fixtures/leaky-server.ts');
const PROC_VALUE = 'proc-key-9f8e7d6c5b4a';
const FILE_VALUE = 'file-key-Zq9+echo/me"1';
const forms = (value: string) => [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)];
const SECRETS = [...forms(PROC_VALUE), ...forms(FILE_VALUE)];
const leaks = (text: string) => SECRETS.some((s) => text.includes(s));

const gateways: GatewayProcess[] = [];
const clients: Client[] = [];
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  for (const gateway of gateways) await gateway.kill();
  removeTemporaries();
});

interface Seen {
  /** Every message the client received, in order. */
  messages: JSONRPCMessage[];
}

async function connect(url: string): Promise<{ client: Client; seen: Seen }> {
  const client = new Client(
    { name: 'leak-agent', version: '1.0.0' },
    { capabilities: { elicitation: {}, sampling: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { ok: true } }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    model: 'none',
    role: 'assistant',
    content: { type: 'text', text: 'ok' },
  }));
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  clients.push(client);
  const seen: Seen = { messages: [] };
  const deliver = transport.onmessage;
  transport.onmessage = (message) => {
    seen.messages.push(message);
    deliver?.(message);
  };
  return { client, seen };
}

/** One path an upstream has to the client: what it does, and what of it reached the client. */
interface PathRun {
  path: string;
  received: string;
  ref?: string;
}

async function runPaths(client: Client, seen: Seen, upstream: string, life: string): Promise<PathRun[]> {
  const runs: PathRun[] = [];
  const call = async (path: string, tool: string, extra: { progress?: boolean } = {}) => {
    const before = seen.messages.length;
    const result = (await client.callTool(
      // A key of its own per process: the same call again would be a replay of the first one's.
      { name: `${upstream}__${tool}`, arguments: { key: `${life}: ${path}` } },
      undefined,
      extra.progress ? { onprogress: () => {} } : {},
    )) as CallToolResult;
    const ref = result._meta?.[META.executionId] ?? result.structuredContent?.idem;
    runs.push({
      path,
      received: JSON.stringify([result, seen.messages.slice(before)]),
      ...(typeof ref === 'string' ? { ref } : {}),
      ...(typeof ref === 'object' && ref !== null ? { ref: (ref as { ref?: string }).ref } : {}),
    });
    return result;
  };
  await call('text and structuredContent', 'leak_text');
  await call('isError result', 'leak_error');
  await call('JSON-RPC error', 'leak_jsonrpc');
  await call('progress', 'leak_progress', { progress: true });
  const logged = seen.messages.length;
  await call('logging', 'leak_log');
  // The log line rides the session's own stream: wait for it to arrive, scrubbed or not.
  await vi.waitFor(
    () =>
      expect(
        seen.messages.slice(logged).some((m) => 'method' in m && m.method === 'notifications/message'),
      ).toBe(true),
    PATIENTLY,
  );
  runs.push({
    path: 'logging (stream)',
    received: JSON.stringify(seen.messages.slice(logged)),
  });
  await call('elicitation request', 'leak_elicit');
  await call('sampling request', 'leak_sample');
  await call('upstream task status and result', 'leak_task');
  await call('read-only result', 'leak_read');
  // Resources are not prefixed: with several upstreams, a read goes to the first that has them.
  if (upstream === 'leaky') {
    const resource = await client.readResource({ uri: 'leaky://key' });
    runs.push({ path: 'resource', received: JSON.stringify(resource) });
  }
  const prompt = await client.getPrompt({ name: `${upstream}__leaky-prompt` });
  runs.push({ path: 'prompt', received: JSON.stringify(prompt) });
  return runs;
}

/** The paths that leaked: what the client got, and what an operator reads of each execution. */
async function leakedPaths(runs: PathRun[], dataDir: string): Promise<string[]> {
  const leaked: string[] = [];
  for (const run of runs) {
    if (leaks(run.received)) leaked.push(`${run.path}: to the client`);
    if (!run.ref) continue;
    const shown = await runIdem(['executions', 'show', run.ref, '--json'], { dataDir });
    expect(shown.code).toBe(0);
    if (leaks(shown.stdout)) leaked.push(`${run.path}: idem executions show`);
  }
  return leaked;
}

function storeLeaks(dataDir: string): string[] {
  return readdirSync(dataDir)
    .filter((f) => f.startsWith('idem.db'))
    .filter((f) => {
      const bytes = readFileSync(join(dataDir, f));
      return SECRETS.some((s) => bytes.includes(Buffer.from(s)));
    });
}

describe('credentials and stdio upstreams (issue 44, item 1)', () => {
  it('withholds every configured credential from upstreams not handed it, and scrubs every path from the first call, across a restart', async () => {
    const dataDir = freshDir('cred-leaks');
    const keyFile = join(dataDir, 'k2.key');
    writeFileSync(keyFile, `${FILE_VALUE}\n`);
    chmodSync(keyFile, 0o600);
    const leaky = (args: string[]) => ({
      command: process.execPath,
      args: [...fixtureArgs(LEAKY), ...args],
      cwd: REPO_ROOT,
    });
    const config = {
      data_dir: dataDir,
      credentials: { k1: { env: 'PROC_KEY' }, k2: { file: keyFile } },
      upstreams: {
        leaky: leaky(['--from-env', 'PROC_KEY', '--from-file', keyFile]),
        handed: { ...leaky(['--from-env', 'HANDED']), env: { HANDED: `${'$'}{PROC_KEY}` } },
      },
    };
    const start = async () => {
      const gateway = await startGatewayProcess(config, join(dataDir, 'idem.json'), {
        env: { PROC_KEY: PROC_VALUE },
      });
      gateways.push(gateway);
      return gateway;
    };

    const report = { tried: 0, leaked: [] as string[] };
    let firstRefs: string[] = [];
    for (const life of ['first process', 'after a restart']) {
      const gateway = await start();
      const { client, seen } = await connect(gateway.url);
      // Not inherited by the upstream that was not handed it; handed on purpose to the other.
      const has = async (upstream: string, name: string) =>
        ((await client.callTool({ name: `${upstream}__has_env`, arguments: { name } })) as CallToolResult)
          .structuredContent?.present;
      expect(await has('leaky', 'PROC_KEY')).toBe(false);
      expect(await has('handed', 'HANDED')).toBe(true);

      const runs = [
        ...(await runPaths(client, seen, 'leaky', life)),
        ...(await runPaths(client, seen, 'handed', life)),
      ];
      // The status tool replays what the first process stored.
      for (const ref of firstRefs) {
        const status = await client.callTool({ name: 'idem_execution_status', arguments: { ref } });
        runs.push({ path: `status tool replay of ${ref}`, received: JSON.stringify(status) });
      }
      firstRefs = runs.map((r) => r.ref).filter((r): r is string => r !== undefined);
      expect(firstRefs.length).toBeGreaterThanOrEqual(16);
      report.tried += runs.length;
      report.leaked.push(...(await leakedPaths(runs, dataDir)).map((p) => `${life}: ${p}`));
      report.leaked.push(...storeLeaks(dataDir).map((f) => `${life}: ${f}`));
      await client.close();
      await gateway.kill();
      if (leaks(gateway.stderr())) report.leaked.push(`${life}: the gateway's stderr (log, upstream stderr)`);
      // The upstream's stderr line did come through (scrubbed), so it was tried.
      expect(gateway.stderr()).toContain('leaky: starting with [secret]');
    }
    const exported = await runIdem(['audit', 'export', '--db', join(dataDir, 'idem.db')], { dataDir });
    expect(exported.code).toBe(0);
    if (leaks(exported.stdout)) report.leaked.push('the journal export');
    report.leaked.push(...storeLeaks(dataDir));

    expect(report.tried).toBeGreaterThanOrEqual(60);
    expect(report.leaked).toEqual([]);
  }, 180_000);
});
