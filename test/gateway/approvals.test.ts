import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  ElicitRequestSchema,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalView } from '../../src/approval/view.js';
import { idemCodeOf } from '../../src/executions/answers.js';
import { executionsOf } from '../gateway/fixtures/counting-server.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, mcpClient, startGatewayProcess } from '../support/gateway-process.js';
import { idemCommand } from '../support/idem-cli.js';
import { runIdem } from '../support/run-cli.js';

/**
 * Approvals through a gateway process on SQLite, decided by the operator CLI
 * (its own processes) and by MCP elicitation to SDK clients. Executions are
 * counted on the far side, by the counting upstream.
 */
const work = mkdtempSync(join(tmpdir(), 'idem-approvals-'));
const counts = join(work, 'counts');
mkdirSync(counts);
const clients: Client[] = [];
let everyCall: GatewayProcess;
let perSession: GatewayProcess;

function config(name: string, approval: 'every_call' | 'session') {
  const dataDir = join(work, name);
  mkdirSync(dataDir, { recursive: true });
  return {
    data_dir: dataDir,
    upstreams: { counter: countingUpstream(counts) },
    tools: { count: { replay: 'status', approval, attach_window: '1h', timeout: '90s' } },
    sweep_interval: '1h',
  };
}

const dbOf = (name: string) => join(work, name, 'idem.db');
const idem = (args: string[]) => runIdem(args, { dataDir: work });

async function agent(gateway: GatewayProcess, name = 'approval-agent'): Promise<Client> {
  const c = await mcpClient(gateway.url, name);
  clients.push(c);
  return c;
}

/** An SDK client that declares elicitation and answers every request with `answer`; counts the prompts. */
async function elicitingAgent(
  gateway: GatewayProcess,
  answer: ElicitResult,
): Promise<{ client: Client; prompts: string[] }> {
  const client = new Client(
    { name: 'approval-agent', version: '1.0.0' },
    { capabilities: { elicitation: {} } },
  );
  const prompts: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    prompts.push((request.params as { message: string }).message);
    return answer;
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  clients.push(client);
  return { client, prompts };
}

const count = (c: Client, key: string) =>
  c.callTool({ name: 'count', arguments: { key } }, undefined, {
    timeout: 120_000,
  }) as Promise<CallToolResult>;
const refOf = (r: CallToolResult) => r._meta?.['io.idem/execution-id'] as string | undefined;

async function pending(name: string): Promise<ApprovalView[]> {
  const listed = await idem(['approvals', 'list', '--db', dbOf(name), '--json']);
  expect(listed.code, listed.stderr).toBe(0);
  return JSON.parse(listed.stdout) as ApprovalView[];
}

async function timeline(
  name: string,
  ref: string,
): Promise<{ kind: string; detail: Record<string, unknown> }[]> {
  const shown = await idem(['executions', 'show', ref, '--db', dbOf(name), '--json']);
  expect(shown.code, shown.stderr).toBe(0);
  return (JSON.parse(shown.stdout) as { timeline: { kind: string; detail: Record<string, unknown> }[] })
    .timeline;
}

beforeAll(async () => {
  [everyCall, perSession] = await Promise.all([
    startGatewayProcess(config('every-call', 'every_call'), join(work, 'every-call.json')),
    startGatewayProcess(config('per-session', 'session'), join(work, 'per-session.json')),
  ]);
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await everyCall?.kill();
  await perSession?.kill();
  rmSync(work, { recursive: true, force: true });
}, 60_000);

describe('approval: every_call, decided with idem approvals', () => {
  it('waits; a retry from a new session attaches (same ref, one request); approve → one dispatch, the retry gets the result', async () => {
    const first = await count(await agent(everyCall), 'approve-1');
    expect(idemCodeOf(first)).toBe('IDEM_AWAITING_APPROVAL');
    const ref = refOf(first) as string;
    const again = await count(await agent(everyCall), 'approve-1');
    expect(idemCodeOf(again)).toBe('IDEM_AWAITING_APPROVAL');
    expect(refOf(again)).toBe(ref);
    expect(executionsOf(counts, 'approve-1')).toBe(0);

    const queue = (await pending('every-call')).filter((v) => v.ref === ref);
    expect(queue).toHaveLength(1);
    expect(queue[0]).toMatchObject({
      tool: 'count',
      channel: 'mcp',
      target: 'counter',
      credential: null,
      earlier: null,
      decision: null,
      policy: 'every_call',
    });
    expect(queue[0]?.arguments).toContain('approve-1');
    expect(queue[0]?.fingerprint).toMatch(/^fp_/);
    expect(queue[0]?.actor).toContain('approval-agent');

    const approved = await idem([
      'approvals',
      'approve',
      ref,
      '--db',
      dbOf('every-call'),
      '--operator',
      'alice',
    ]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain('approved by alice');

    const retry = await count(await agent(everyCall), 'approve-1');
    expect(idemCodeOf(retry)).toBeUndefined();
    expect(retry.structuredContent).toEqual({ key: 'approve-1', value: 1 });
    expect(refOf(retry)).toBe(ref);
    const later = await count(await agent(everyCall), 'approve-1');
    expect(later._meta?.['io.idem/replayed']).toBe(true);
    expect(executionsOf(counts, 'approve-1')).toBe(1);

    const events = await timeline('every-call', ref);
    expect(events.find((e) => e.kind === 'accepted')?.detail).toMatchObject({ ladder: 'every_call' });
    expect(events.find((e) => e.kind === 'authorized')?.detail).toEqual({ by: 'alice', via: 'cli' });
    expect(events.filter((e) => e.kind === 'dispatched')).toHaveLength(1);
  }, 180_000);

  it('deny → IDEM_DENIED with the reason, to the caller and its retries; nothing dispatched', async () => {
    const first = await count(await agent(everyCall), 'deny-1');
    const ref = refOf(first) as string;
    const denied = await idem([
      'approvals',
      'deny',
      ref,
      '--db',
      dbOf('every-call'),
      '--reason',
      'not during the freeze',
      '--operator',
      'bob',
    ]);
    expect(denied.code, denied.stderr).toBe(0);
    const retry = await count(await agent(everyCall), 'deny-1');
    expect(idemCodeOf(retry)).toBe('IDEM_DENIED');
    expect(refOf(retry)).toBe(ref);
    expect(JSON.stringify(retry.content)).toContain('not during the freeze');
    expect(executionsOf(counts, 'deny-1')).toBe(0);
    const shown = await idem(['approvals', 'show', ref, '--db', dbOf('every-call'), '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      decision: 'denied',
      decidedBy: 'bob',
      decidedVia: 'cli',
      reason: 'not during the freeze',
    });
  }, 120_000);

  it('an approve and a deny at once: one decision stands, the other operator is told', async () => {
    const ref = refOf(await count(await agent(everyCall), 'race-1')) as string;
    const [approve, deny] = await Promise.all([
      idem(['approvals', 'approve', ref, '--db', dbOf('every-call'), '--operator', 'alice', '--json']),
      idem(['approvals', 'deny', ref, '--db', dbOf('every-call'), '--operator', 'bob', '--json']),
    ]);
    const outcomes = [approve, deny].map(
      (r) => JSON.parse(r.stdout) as { decided: boolean; approval: ApprovalView },
    );
    expect(outcomes.filter((o) => o.decided)).toHaveLength(1);
    expect([approve.code, deny.code].sort()).toEqual([0, 1]);
    // Both see the one decision that stands.
    expect(outcomes[0]?.approval.decision).toBe(outcomes[1]?.approval.decision);
    expect(
      (await timeline('every-call', ref)).filter((e) => e.kind === 'authorized' || e.kind === 'denied'),
    ).toHaveLength(1);
  }, 120_000);
});

describe('approval by MCP elicitation to the client', () => {
  it('a client that accepts: approved through the gateway, the call itself runs once; journaled as elicitation', async () => {
    const { client, prompts } = await elicitingAgent(everyCall, { action: 'accept', content: {} });
    const result = await count(client, 'elicit-yes');
    expect(idemCodeOf(result)).toBeUndefined();
    expect(result.structuredContent).toEqual({ key: 'elicit-yes', value: 1 });
    expect(prompts).toHaveLength(1);
    expect(prompts[0]).toContain('count');
    expect(prompts[0]).toContain('elicit-yes');
    const events = await timeline('every-call', refOf(result) as string);
    expect(events.find((e) => e.kind === 'authorized')?.detail).toMatchObject({ via: 'elicitation' });
    expect(executionsOf(counts, 'elicit-yes')).toBe(1);
  }, 120_000);

  it('a client that declines: denied, nothing dispatched; its retry gets the denial without a second prompt', async () => {
    const { client, prompts } = await elicitingAgent(everyCall, { action: 'decline' });
    const result = await count(client, 'elicit-no');
    expect(idemCodeOf(result)).toBe('IDEM_DENIED');
    const retry = await count(client, 'elicit-no');
    expect(idemCodeOf(retry)).toBe('IDEM_DENIED');
    expect(prompts).toHaveLength(1);
    expect(executionsOf(counts, 'elicit-no')).toBe(0);
  }, 120_000);

  it('a client without the capability: the operator queue', async () => {
    const result = await count(await agent(everyCall), 'elicit-none');
    expect(idemCodeOf(result)).toBe('IDEM_AWAITING_APPROVAL');
    expect((await pending('every-call')).map((v) => v.ref)).toContain(refOf(result));
  }, 120_000);
});

describe('approval: session', () => {
  it('asked once per session: the second call in it runs without asking; a new session asks again', async () => {
    const first = await elicitingAgent(perSession, { action: 'accept', content: {} });
    expect((await count(first.client, 'session-a')).structuredContent).toEqual({
      key: 'session-a',
      value: 1,
    });
    expect((await count(first.client, 'session-b')).structuredContent).toEqual({
      key: 'session-b',
      value: 1,
    });
    expect(first.prompts).toHaveLength(1);
    const second = await elicitingAgent(perSession, { action: 'accept', content: {} });
    expect((await count(second.client, 'session-c')).structuredContent).toEqual({
      key: 'session-c',
      value: 1,
    });
    expect(second.prompts).toHaveLength(1);
    // Without elicitation, a new session's call waits in the queue.
    const plain = await count(await agent(perSession), 'session-d');
    expect(idemCodeOf(plain)).toBe('IDEM_AWAITING_APPROVAL');
  }, 120_000);
});

describe('approval by elicitation on a stdio front', () => {
  it('the gateway asks the client over stdio; accept → one dispatch, decline → denied', async () => {
    const configPath = join(work, 'stdio.json');
    writeFileSync(configPath, JSON.stringify(config('stdio', 'every_call')));
    const cli = idemCommand(['gateway', '--config', configPath]);
    const answers: ElicitResult[] = [{ action: 'accept', content: {} }, { action: 'decline' }];
    const client = new Client(
      { name: 'stdio-agent', version: '1.0.0' },
      { capabilities: { elicitation: {} } },
    );
    client.setRequestHandler(ElicitRequestSchema, async () => answers.shift() ?? { action: 'cancel' });
    await client.connect(
      new StdioClientTransport({ command: cli.command, args: cli.args, cwd: cli.cwd, stderr: 'ignore' }),
    );
    clients.push(client);
    expect((await count(client, 'stdio-yes')).structuredContent).toEqual({ key: 'stdio-yes', value: 1 });
    expect(idemCodeOf(await count(client, 'stdio-no'))).toBe('IDEM_DENIED');
    expect(answers).toEqual([]);
    expect(executionsOf(counts, 'stdio-yes')).toBe(1);
    expect(executionsOf(counts, 'stdio-no')).toBe(0);
  }, 120_000);
});
