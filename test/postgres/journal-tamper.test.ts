import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyFromFlags } from '../../src/cli/audit.js';
import { signJournalHeads } from '../../src/journal/head-signer.js';
import { postgresJournalPageSql } from '../../src/journal/sources.js';
import { verifyStore } from '../../src/journal/verify-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { postgresForTests, type TestPostgres, withDatabase } from '../support/postgres.js';
import { populate, type RunIds } from '../support/tamper.js';

/**
 * The journal tamper suite on PostgreSQL (a few cases; SQLite runs them all):
 * each case tampers with its own copy of one real run's database.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'idem-pg-tamper-'));
let server: TestPostgres;
let ids: RunIds;
/** A second gateway's chain: its seqs, oldest first. */
let writer: { chain: number; seqs: number[] };
const FORGED = JSON.stringify({ result: { content: [{ type: 'text', text: 'charged (forged)' }] } });

beforeAll(async () => {
  server = await postgresForTests();
  const store = await PostgresStore.open({ url: server.url });
  const second = await PostgresStore.open({ url: server.url });
  try {
    ids = await populate(store, dataDir, { calls: 30 });
    // A second gateway on the same database appends to a chain of its own.
    for (let i = 0; i < 6; i++) await second.appendEvents([{ kind: 'receipt_hit', requestRef: `r${i}` }]);
    const [chain] = await second.journalChains('activity').then((all) => all.slice(-1));
    const rows = (await second.readJournal(0, 100_000)).filter((e) => e.chain === chain?.chain);
    writer = { chain: chain?.chain as number, seqs: rows.map((e) => e.seq) };
    await signJournalHeads(store, dataDir);
  } finally {
    await store.close();
    await second.close();
  }
}, 120_000);
afterAll(async () => {
  await server?.dispose();
  rmSync(dataDir, { recursive: true, force: true });
});

let copies = 0;
/** A copy of the run's database (CREATE DATABASE … TEMPLATE), tampered with by `sql`, the append-only triggers off. */
async function tampered(sql: (db: pg.Client) => Promise<unknown>): Promise<string> {
  const source = new URL(server.url).pathname.slice(1);
  const name = `${source}_tamper_${++copies}`;
  const admin = new pg.Client({ connectionString: withDatabase(server.url, 'postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${source}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(server.url, name);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    await db.query('SET session_replication_role = replica');
    await sql(db);
  } finally {
    await db.end();
  }
  return url;
}

const verify = (url: string) =>
  verifyFromFlags({
    db: url,
    head: join(dataDir, 'journal-head.json'),
    publicKey: join(dataDir, 'journal-signing.pub'),
  });

describe('idem audit verify on PostgreSQL', () => {
  it('reads the journal page by page through the seq index, sorting nothing', async () => {
    const db = new pg.Client({ connectionString: server.url });
    await db.connect();
    try {
      // As the planner reads a large journal: on a table this small it prefers a scan and a sort.
      // The sort then remains only where no index gives the order (ORDER BY the float8 output).
      await db.query('SET enable_seqscan = off');
      await db.query('SET enable_bitmapscan = off');
      for (const stream of ['activity', 'sessions'] as const) {
        const { rows } = await db.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN ${postgresJournalPageSql(stream, ', chain').replace('$1', '0').replace('$2', '20000')}`,
        );
        const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
        expect(plan).toMatch(/Index Scan/);
        expect(plan).not.toMatch(/Sort/);
      }
    } finally {
      await db.end();
    }
  });

  it('the untouched run verifies: both streams, every execution', async () => {
    const { report } = await verify(await tampered(async () => {}));
    expect(report.firstBad).toBeUndefined();
    expect(report.executions?.checked).toBeGreaterThan(30);
    expect(report.executions?.outcomesChecked).toBeGreaterThan(30);
  });

  /** The seq of the row `offset` rows from the start of `table` (seqs skip: each row takes a block, docs/adr/0053). */
  const rowSeq = async (db: pg.Client, table: string, offset: number, order = 'ASC') =>
    (
      await db.query<{ n: number }>(
        `SELECT seq::int AS n FROM ${table} ORDER BY seq ${order} OFFSET $1 LIMIT 1`,
        [offset],
      )
    ).rows[0]?.n ?? 0;

  it('an edited row: edited, at its seq', async () => {
    let seq = 0;
    const url = await tampered(async (db) => {
      seq = await rowSeq(db, 'activity_journal', 7);
      await db.query("UPDATE activity_journal SET actor = 'token:mallory' WHERE seq = $1", [seq]);
    });
    expect((await verify(url)).report.firstBad).toMatchObject({ stream: 'activity', seq, problem: 'edited' });
  });

  it("an edit inside a row's events: edited, naming the row and its events", async () => {
    let row = { seq: 0, events: 0 };
    const url = await tampered(async (db) => {
      [row] = (
        await db.query<{ seq: number; events: number }>(
          'SELECT seq::int AS seq, events FROM activity_journal WHERE events >= 3 ORDER BY seq OFFSET 2 LIMIT 1',
        )
      ).rows as [typeof row];
      await db.query(
        `UPDATE activity_journal SET detail = replace(detail, '"dispatched"', '"failed"') WHERE seq = $1`,
        [row.seq],
      );
    });
    const { firstBad } = (await verify(url)).report;
    expect(firstBad).toMatchObject({ stream: 'activity', seq: row.seq, problem: 'edited' });
    expect(firstBad?.message).toContain(`the row of events ${row.seq - row.events + 1}–${row.seq}`);
  });

  it('the tail cut off: truncated, after the last row left', async () => {
    let kept = 0;
    const url = await tampered(async (db) => {
      kept = await rowSeq(db, 'activity_journal', 3, 'DESC');
      await db.query('DELETE FROM activity_journal WHERE seq > $1', [kept]);
    });
    expect((await verify(url)).report.firstBad).toMatchObject({ seq: kept + 1, problem: 'truncated' });
  });

  it('the sessions stream edited: found without asking for it', async () => {
    let seq = 0;
    const url = await tampered(async (db) => {
      seq = await rowSeq(db, 'sessions_journal', 1);
      await db.query("UPDATE sessions_journal SET actor = 'token:mallory' WHERE seq = $1", [seq]);
    });
    expect((await verify(url)).report.firstBad).toMatchObject({ stream: 'sessions', seq, problem: 'edited' });
  });

  it('an unknown forged into completed with a fake result: state_mismatch, naming the execution', async () => {
    const url = await tampered((db) =>
      db.query("UPDATE executions SET state = 'completed', outcome = $1 WHERE id = $2", [
        FORGED,
        ids.unknown,
      ]),
    );
    expect((await verify(url)).report.firstBad).toMatchObject({
      executionId: ids.unknown,
      problem: 'state_mismatch',
    });
  });

  it("a completed execution's result forged: outcome_mismatch", async () => {
    const id = ids.completed[4] as string;
    const url = await tampered((db) =>
      db.query('UPDATE executions SET outcome = $1 WHERE id = $2', [FORGED, id]),
    );
    expect((await verify(url)).report.firstBad).toMatchObject({
      executionId: id,
      problem: 'outcome_mismatch',
    });
  });

  it('an unknown execution deleted: execution_missing', async () => {
    const url = await tampered((db) => db.query('DELETE FROM executions WHERE id = $1', [ids.dead]));
    expect((await verify(url)).report.firstBad).toMatchObject({
      executionId: ids.dead,
      problem: 'execution_missing',
    });
  });

  it('the oldest completed execution deleted inside its retention (as a trim would remove it): execution_missing', async () => {
    const id = ids.completed[0] as string;
    const url = await tampered((db) => db.query('DELETE FROM executions WHERE id = $1', [id]));
    const { report } = await verify(url);
    expect(report.firstBad).toMatchObject({ executionId: id, problem: 'execution_missing' });
    expect(report.firstBad?.message).toContain('no trim recorded it');
  });

  it('a real sweep past retention verifies: its trimmed events name every execution it deleted', async () => {
    const url = await tampered(async () => {});
    const store = await PostgresStore.open({ url });
    let trimmed: number;
    try {
      trimmed = (await store.sweep({ retentionMs: 0 })).trimmed;
    } finally {
      await store.close();
    }
    expect(trimmed).toBe(ids.completed.length + 3);
    const { report } = await verify(url);
    expect(report.firstBad).toBeUndefined();
    expect(report.executions).toMatchObject({ trimmed, trimmedUnrecorded: 0 });
  });

  describe("a second gateway's chain", () => {
    it('a middle row deleted: missing, at the row after it', async () => {
      const url = await tampered((db) =>
        db.query('DELETE FROM activity_journal WHERE seq = $1', [writer.seqs[2]]),
      );
      expect((await verify(url)).report.firstBad).toMatchObject({
        stream: 'activity',
        chain: writer.chain,
        seq: writer.seqs[3],
        problem: 'missing',
      });
    });

    it('its whole chain deleted: truncated, against its registered end even with no signed head at hand', async () => {
      const url = await tampered((db) =>
        db.query('DELETE FROM activity_journal WHERE chain = $1', [writer.chain]),
      );
      const report = await verifyStore({ kind: 'postgres', url }, { streams: ['activity'], heads: [] });
      expect(report.firstBad).toMatchObject({
        chain: writer.chain,
        problem: 'truncated',
        message: expect.stringContaining('registered head'),
      });
      expect((await verify(url)).report.firstBad).toMatchObject({
        chain: writer.chain,
        problem: 'truncated',
      });
    });

    it('its whole chain and its registry row deleted: truncated, against its signed head', async () => {
      const url = await tampered(async (db) => {
        await db.query('DELETE FROM activity_journal WHERE chain = $1', [writer.chain]);
        await db.query('DELETE FROM journal_head WHERE chain = $1', [writer.chain]);
      });
      expect((await verify(url)).report.firstBad).toMatchObject({
        chain: writer.chain,
        problem: 'truncated',
        message: expect.stringContaining('signed head'),
      });
    });

    it('two of its rows swapped (seqs exchanged): found', async () => {
      const [a, b] = [writer.seqs[1], writer.seqs[4]];
      const url = await tampered(async (db) => {
        await db.query('UPDATE activity_journal SET seq = -1 WHERE seq = $1', [a]);
        await db.query('UPDATE activity_journal SET seq = $1 WHERE seq = $2', [a, b]);
        await db.query('UPDATE activity_journal SET seq = $1 WHERE seq = -1', [b]);
      });
      expect((await verify(url)).report.firstBad).toMatchObject({ chain: writer.chain, seq: a });
    });
  });
});
