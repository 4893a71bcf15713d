/**
 * Upstreams started ahead (issue 30, session start): a stateful HTTP session's
 * own stdio upstream is a process started before the session was opened, one
 * spare per upstream at most, none for a `share: true` upstream, a spare that
 * dies is replaced and said in the log, and the gateway's close ends them.
 * Real gateway in process, real SDK clients over loopback HTTP, real upstream
 * processes, found on the far side: the counting fixture logs each start's pid,
 * and /proc shows every process the moment it is spawned.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';
import { readExecutions, readStarts } from './fixtures/counting-server.js';

let running: RunningGateway | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  await running?.close();
  running = undefined;
  removeTemporaries();
});

function countsDir(name: string): string {
  const dir = freshDir(name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The live processes counting into `dir` (their command line names it), spawned or not yet loaded. */
function upstreamProcesses(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const state = /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${entry}/stat`, 'utf8'))?.[1];
      if (state !== 'Z' && argv.includes(dir)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids.sort((a, b) => a - b);
}

async function session(url: string, name: string) {
  const client = new Client({ name, version: '1' });
  clients.push(client);
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport };
}

/** Which process ran the call of `key` (the fixture logs its pid with each execution). */
function executedBy(dir: string, key: string): number | undefined {
  return readExecutions(dir).find((e) => e.key === key)?.pid;
}

describe('upstream processes started ahead of the session that needs them', () => {
  it("gives each new session a process started before it was opened, keeps one spare at most (none for share: true), and leaves none at the gateway's close", async () => {
    const own = countsDir('spares-own');
    const pooled = countsDir('spares-pooled');
    running = await startHttpGateway({
      upstreams: {
        own: { ...countingUpstream(own), spare: true },
        pooled: { ...countingUpstream(pooled), share: true, spare: true },
      },
    });
    // Before any session: one process of `own` is started, and none of the shared upstream.
    await vi.waitFor(() => expect(readStarts(own)).toHaveLength(1), PATIENTLY);
    const [first] = readStarts(own);
    expect(upstreamProcesses(own)).toEqual([first]);
    expect(upstreamProcesses(pooled)).toEqual([]);

    const a = await session(running.url, 'agent-a');
    await a.client.callTool({ name: 'own__count', arguments: { key: 'a' } });
    await a.client.callTool({ name: 'pooled__count', arguments: { key: 'pa' } });
    expect(executedBy(own, 'a')).toBe(first);
    // Its replacement was spawned when session a took the spare: the spare, and a's own.
    expect(upstreamProcesses(own)).toHaveLength(2);
    await vi.waitFor(() => expect(readStarts(own)).toHaveLength(2), PATIENTLY);
    const second = readStarts(own)[1] as number;

    const b = await session(running.url, 'agent-b');
    await b.client.callTool({ name: 'own__count', arguments: { key: 'b' } });
    await b.client.callTool({ name: 'pooled__count', arguments: { key: 'pb' } });
    // Session b runs on the process started (and logged) before b was opened.
    expect(executedBy(own, 'b')).toBe(second);
    // Two sessions' processes and one spare, never more; the shared upstream is one process, no spare.
    await vi.waitFor(() => expect(readStarts(own)).toHaveLength(3), PATIENTLY);
    expect(upstreamProcesses(own)).toEqual([...readStarts(own)].sort((x, y) => x - y));
    expect(upstreamProcesses(pooled)).toHaveLength(1);

    // A session that ends takes its process with it; the spare stays for the next one.
    await a.transport.terminateSession();
    await vi.waitFor(() => expect(upstreamProcesses(own)).not.toContain(first), PATIENTLY);
    expect(upstreamProcesses(own)).toHaveLength(2);

    await running.close();
    running = undefined;
    expect(upstreamProcesses(own)).toEqual([]);
    expect(upstreamProcesses(pooled)).toEqual([]);
  }, 90_000);

  it('replaces a spare that dies before a session takes it, and says so in the log', async () => {
    const dir = countsDir('spares-dying');
    const warnings: string[] = [];
    running = await startHttpGateway(
      { upstreams: { counter: { ...countingUpstream(dir), spare: true } } },
      { logger: { warn: (message) => warnings.push(message), error: () => {} } },
    );
    await vi.waitFor(() => expect(readStarts(dir)).toHaveLength(1), PATIENTLY);
    const spare = readStarts(dir)[0] as number;
    process.kill(spare, 'SIGKILL');
    await vi.waitFor(() => expect(readStarts(dir)).toHaveLength(2), PATIENTLY);
    expect(warnings.filter((w) => w.includes('spare'))).toEqual([
      expect.stringMatching(
        /^a spare process of upstream counter, started ahead for the next session, ended before a session took it \(killed by SIGKILL\); another is started in \d+ ms$/,
      ),
    ]);
    const replacement = readStarts(dir)[1] as number;
    const s = await session(running.url, 'agent');
    await s.client.callTool({ name: 'count', arguments: { key: 'k' } });
    expect(executedBy(dir, 'k')).toBe(replacement);
  }, 90_000);

  it('by default (and with spare: false), a session starts its own process when it initializes, and none waits beside it', async () => {
    const dir = countsDir('spares-off');
    running = await startHttpGateway({ upstreams: { counter: countingUpstream(dir) } });
    expect(upstreamProcesses(dir)).toEqual([]);
    const s = await session(running.url, 'agent');
    await s.client.callTool({ name: 'count', arguments: { key: 'k' } });
    expect(readStarts(dir)).toHaveLength(1);
    expect(upstreamProcesses(dir)).toEqual(readStarts(dir));
  }, 90_000);
});
