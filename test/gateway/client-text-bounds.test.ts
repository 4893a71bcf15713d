/**
 * Issue 44, item 3: what a client chooses and the append-only journal keeps
 * is bounded. A request id may be as large as the body (4 MiB); it was
 * journaled five times per call, in rows never trimmed. Now an id, a tool
 * name not yet looked up and a client's name or version past 128 characters
 * are kept as their start and SHA-256 (identity/client-text.ts) — and the
 * receipts keyed by them still hold: a resend of a 1 MiB id is answered from
 * its receipt, the same id with other content is refused, and two 1 MiB ids
 * that differ in their last character are two requests.
 *
 * The gateway in process on loopback HTTP, a raw JSON-RPC client (the SDK
 * client never sends such ids), the counting upstream on the far side.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { RawMcpHttp } from '../support/raw-mcp-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { executionsOf } from './fixtures/counting-server.js';

const MIB = 1024 * 1024;
/** The most a journal row's client-chosen columns may hold here: bounded, whatever the client sent. */
const MAX_COLUMN = 1024;

describe('what a client chooses is bounded in receipts and the journal (issue 44, item 3)', () => {
  let gateway: RunningGateway;
  let raw: RawMcpHttp;
  const counts = freshDir('bounds-counts');

  beforeAll(async () => {
    gateway = await startHttpGateway({ upstreams: { counter: countingUpstream(counts) } });
    raw = new RawMcpHttp(gateway.url);
    // A client name of 256 KiB: it is part of the actor, which every row of the journal names.
    await raw.initialize(`agent-${'n'.repeat(256 * 1024)}`);
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    removeTemporaries();
  });

  it('a 1 MiB id is journaled by its digest, and its receipt still answers its resend and refuses its reuse', async () => {
    const dbBytes = () => {
      const db = join(gateway.dataDir, 'idem.db');
      return statSync(db).size + (statSync(`${db}-wal`, { throwIfNoEntry: false })?.size ?? 0);
    };
    const before = dbBytes();
    const id = (last: string) => `${'i'.repeat(MIB - 1)}${last}`;
    const count = async (requestId: string, key: string) =>
      (await raw.callTool(requestId, 'count', { key })) as {
        result?: { content: { text: string }[] };
        error?: { message: string };
      };

    for (const last of ['a', 'b', 'c', 'd', 'e']) {
      const answer = await count(id(last), `big-${last}`);
      expect(answer.result?.content[0]?.text).toBe(`big-${last}=1`);
    }
    // Two ids that differ in their last character only were two requests, each run once.
    for (const last of ['a', 'e']) expect(executionsOf(counts, `big-${last}`)).toBe(1);

    // The same message again: answered from its receipt, not run again.
    const resent = await count(id('a'), 'big-a');
    expect(resent.result?.content[0]?.text).toBe('big-a=1');
    expect(executionsOf(counts, 'big-a')).toBe(1);
    // The same id with other content, in this session: refused, nothing run.
    const reused = await count(id('a'), 'other');
    expect(reused.error?.message).toMatch(/^MCP_REQUEST_ID_REUSED/);
    expect(executionsOf(counts, 'other')).toBe(0);

    // A 1 MiB tool name: refused as unknown (a protocol error), and journaled bounded if at all.
    const unknown = await raw.callTool('unknown-tool', 't'.repeat(MIB), {});
    expect(unknown.error).toBeDefined();

    const activity = await gateway.gateway.store.readJournal(0, 10_000);
    const sessions = await gateway.gateway.store.readJournal(0, 10_000, 'sessions');
    expect(activity.filter((e) => e.kind === 'receipt_hit')).toHaveLength(1);
    expect(activity.filter((e) => e.kind === 'id_reused')).toHaveLength(1);
    const widest = Math.max(
      ...[...activity, ...sessions].map((e) =>
        Math.max(
          e.requestRef?.length ?? 0,
          e.actor?.length ?? 0,
          e.tool?.length ?? 0,
          JSON.stringify(e.detail).length,
        ),
      ),
    );
    expect(widest).toBeLessThanOrEqual(MAX_COLUMN);
    const started = sessions.find((e) => e.kind === 'session_start');
    expect(JSON.stringify(started?.detail.client)).toMatch(
      /"name":"agent-n{58}… \(262150 characters, sha256:[\w-]{43}\)"/,
    );
    // Seven calls with 1 MiB ids (and a 256 KiB client name): the store grew by far less than one id.
    expect(dbBytes() - before).toBeLessThan(MIB);
  }, 60_000);
});
