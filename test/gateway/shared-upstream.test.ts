/**
 * `upstreams.<name>.share: true` (issue 26, item 6): one upstream process for
 * every stateful session, requests multiplexed on it, and what the upstream
 * asks a client going to the session whose call it is working on. Real SDK
 * clients over loopback HTTP; upstream processes counted on the far side.
 */
import { mkdirSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { rawSession } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { readExecutions, readStarts } from './fixtures/counting-server.js';

let running: RunningGateway | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  removeTemporaries();
});

async function start(share: boolean) {
  const counts = freshDir('shared-upstream');
  mkdirSync(counts, { recursive: true });
  const upstream = countingUpstream(counts);
  running = await startHttpGateway({
    upstreams: { counter: { ...upstream, args: [...upstream.args, '--asking'], share } },
  });
  return { url: running.url, counts };
}

/** An SDK client that confirms every elicitation, and says which session it is in. */
async function connect(url: string, name: string) {
  const client = new Client({ name, version: '1' }, { capabilities: { elicitation: {} } });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return { action: 'accept', content: { ok: true } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport, asked };
}

/** What the tool said (past Idem's replay note, when it is one). */
const text = textOf;

describe('a shared upstream', () => {
  it('serves every session from one process, each call answered in its own session', async () => {
    const { url, counts } = await start(true);
    const sessions = await Promise.all(['agent-a', 'agent-b', 'agent-c'].map((name) => connect(url, name)));
    const results = await Promise.all(
      sessions.map(({ client }, i) => client.callTool({ name: 'count', arguments: { key: `k${i}` } })),
    );
    expect(results.map(text)).toEqual(['k0=1', 'k1=1', 'k2=1']);
    expect(readStarts(counts)).toHaveLength(1);
    // A session that ends does not end the shared process: the others go on using it.
    await sessions[0]?.transport.terminateSession();
    await sessions[0]?.client.close();
    expect(text(await sessions[1]?.client.callTool({ name: 'count', arguments: { key: 'k3' } }))).toBe(
      'k3=1',
    );
    expect(readStarts(counts)).toHaveLength(1);
    for (const s of sessions.slice(1)) await s.client.close();
  }, 60_000);

  it("asks the client of the one call in flight what the upstream needs, not another session's", async () => {
    const { url } = await start(true);
    const idle = await connect(url, 'bystander');
    const caller = await connect(url, 'asker');
    const result = await caller.client.callTool({
      name: 'count_after_asking',
      arguments: { key: 'e1', ask: 'elicitation' },
    });
    expect(text(result)).toBe('e1=1 (confirmed)');
    expect(caller.asked).toEqual(['Count e1?']);
    expect(idle.asked).toEqual([]);
    await idle.client.close();
    await caller.client.close();
  }, 60_000);

  it('refuses resources/subscribe (per-client state) and names the setting', async () => {
    const { url } = await start(true);
    const session = await rawSession(url, 'agent');
    const reply = await session.call({
      id: 's',
      method: 'resources/subscribe',
      params: { uri: 'file:///x' },
    });
    expect(reply.error).toMatchObject({ code: -32601 });
    expect(String((reply.error as { message: string }).message)).toMatch(/upstreams\.counter\.share/);
  }, 60_000);

  it('without share, each session still has a process of its own', async () => {
    const { url, counts } = await start(false);
    const sessions = await Promise.all(['agent-a', 'agent-b'].map((name) => connect(url, name)));
    for (const [i, s] of sessions.entries())
      expect(text(await s.client.callTool({ name: 'count', arguments: { key: `n${i}` } }))).toBe(`n${i}=1`);
    // Each call ran in a process of its session's own (a process started ahead may wait beside them).
    expect(new Set(readExecutions(counts).map((e) => e.pid)).size).toBe(2);
    for (const s of sessions) await s.client.close();
  }, 60_000);
});
