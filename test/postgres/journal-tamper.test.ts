import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyFromFlags } from '../../src/cli/audit.js';
import { signJournalHeads } from '../../src/journal/head-signer.js';
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
const FORGED = JSON.stringify({ result: { content: [{ type: 'text', text: 'charged (forged)' }] } });

beforeAll(async () => {
  server = await postgresForTests();
  const store = await PostgresStore.open({ url: server.url });
  try {
    ids = await populate(store, dataDir, { calls: 30 });
    await signJournalHeads(store, dataDir);
  } finally {
    await store.close();
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
  it('the untouched run verifies: both streams, every execution', async () => {
    const { report } = await verify(await tampered(async () => {}));
    expect(report.firstBad).toBeUndefined();
    expect(report.executions?.checked).toBeGreaterThan(30);
    expect(report.executions?.outcomesChecked).toBeGreaterThan(30);
  });

  it('an edited row: edited, at its seq', async () => {
    const url = await tampered((db) =>
      db.query("UPDATE activity_journal SET actor = 'token:mallory' WHERE seq = 20"),
    );
    expect((await verify(url)).report.firstBad).toMatchObject({
      stream: 'activity',
      seq: 20,
      problem: 'edited',
    });
  });

  it('the tail cut off: truncated, after the last row left', async () => {
    let last = 0;
    const url = await tampered(async (db) => {
      last =
        (await db.query<{ n: number }>('SELECT MAX(seq)::int AS n FROM activity_journal')).rows[0]?.n ?? 0;
      await db.query('DELETE FROM activity_journal WHERE seq > $1', [last - 3]);
    });
    expect((await verify(url)).report.firstBad).toMatchObject({ seq: last - 2, problem: 'truncated' });
  });

  it('the sessions stream edited: found without asking for it', async () => {
    const url = await tampered((db) =>
      db.query("UPDATE sessions_journal SET actor = 'token:mallory' WHERE seq = 2"),
    );
    expect((await verify(url)).report.firstBad).toMatchObject({
      stream: 'sessions',
      seq: 2,
      problem: 'edited',
    });
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
});
