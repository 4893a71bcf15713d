import pgDriver from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import { chainProblems } from '../../../test/support/journal-chains.js';
import { postgresForTests, type TestPostgres } from '../../../test/support/postgres.js';
import { claimEvents, usePostgresSchemas, wholeJournal } from '../../../test/support/postgres-schemas.js';
import {
  chainGenesis,
  envelopeTail,
  eventDetailText,
  journalRowHash,
  rowEventsText,
} from '../../journal/chain.js';
import type { ActivityEventInput } from '../../journal/events.js';
import { postgresJournalRows, postgresRegistry } from '../../journal/sources.js';
import { verifyJournal } from '../../journal/verify.js';
import { verifyStore } from '../../journal/verify-store.js';
import { JOURNAL_SEQ_BLOCK, journalParams } from './journal-rows.js';
import { MIGRATIONS, migrate } from './migrations.js';
import { PostgresStore } from './postgres-store.js';

// PostgreSQL's rows of several events (migration 8, docs/adr/0053): hashed in SQL as chain.ts
// says, their seqs a block of the stream's sequence, verified with the rows written before.

let pg: TestPostgres;
beforeAll(async () => {
  pg = await postgresForTests();
});
afterAll(async () => {
  await pg?.dispose();
});

interface RawRow {
  seq: number;
  at: number;
  kind: string;
  execution_id: string | null;
  detail: string;
  prev_hash: string;
  hash: string;
  chain: number;
  events: number | null;
}
const ROWS =
  'SELECT seq::float8 AS seq, at::float8 AS at, kind, execution_id, detail, prev_hash, hash, chain, events';

/** Events whose text JSON and the database could spell differently, were either to re-spell it. */
const HOSTILE: ActivityEventInput[] = [
  { kind: 'received', executionId: 'exe_1', actor: 'user:zoë', tool: 'a"b\\c', requestRef: '["r","\u0001"]' },
  {
    kind: 'accepted',
    executionId: 'exe_1',
    detail: { z: 1, a: [0.1, -0, 1e21], nul: '\u0000', s: '😀\u2028' },
  },
  { kind: 'dispatched', executionId: 'exe_1', detail: { deep: { b: null, a: true } } },
];

describe('PostgreSQL journal rows of several events', () => {
  const { open, sql, opened } = usePostgresSchemas(() => pg);

  it('a row hashes in SQL to what chain.ts journalRowHash computes (a known answer)', async () => {
    await open();
    const { chain } = (await sql<{ chain: number }>('SELECT journal_register_chain() AS chain'))[0]!;
    const at = 1_764_547_200_000;
    await sql('SELECT journal_append_rows($1, $2, $3, $4, $5, $6, $7)', [
      'activity',
      chain,
      at,
      ...journalParams(HOSTILE, chain).slice(1),
    ]);
    const [row] = await sql<RawRow>(`${ROWS} FROM activity_journal`);
    const text = rowEventsText(HOSTILE);
    // The first row of a fresh stream takes the block 1–8: its seq is its third event's.
    expect(row).toMatchObject({ seq: 3, at, kind: '', execution_id: null, detail: text, events: 3, chain });
    expect(row!.prev_hash).toBe(chainGenesis('activity', chain));
    expect(row!.hash).toBe(journalRowHash(chainGenesis('activity', chain), 3, at, 3, text));
    expect(await sql('SELECT seq::float8 AS seq, execution_id FROM journal_refs')).toEqual([
      { seq: 3, execution_id: 'exe_1' },
    ]);
  });

  it("each nextval reserves JOURNAL_SEQ_BLOCK seqs: the migration's increment is the code's", async () => {
    await open();
    const increments = await sql<{ increment_by: string }>(
      `SELECT increment_by::text FROM pg_sequences WHERE schemaname = current_schema()
         AND sequencename IN ('activity_journal_seq', 'sessions_journal_seq')`,
    );
    expect(increments).toEqual([
      { increment_by: String(JOURNAL_SEQ_BLOCK) },
      { increment_by: String(JOURNAL_SEQ_BLOCK) },
    ]);
    const { chain } = (await sql<{ chain: number }>('SELECT journal_register_chain() AS chain'))[0]!;
    const tooMany = Array.from({ length: JOURNAL_SEQ_BLOCK + 1 }, () => ({ kind: 'received' as const }));
    await expect(
      sql('SELECT journal_append_rows($1, $2, NULL, $3, $4, $5, $6)', [
        'activity',
        chain,
        [tooMany.length],
        [rowEventsText(tooMany)],
        [],
        [],
      ]),
    ).rejects.toThrow(/holds 1 to 8 events/);
  });

  it('a claim is one row; a write of more than a block is split into rows, its seqs still one run', async () => {
    const store = await open();
    const input = claimInput({ state: 'dispatched' });
    await store.claim(input, { events: claimEvents(input) });
    const many = Array.from({ length: 19 }, (_, i) => ({
      kind: 'attached' as const,
      executionId: input.id,
      requestRef: `r${i}`,
    }));
    await store.appendEvents(many);
    const rows = await sql<RawRow>(`${ROWS} FROM activity_journal ORDER BY seq`);
    expect(rows.map((r) => [r.seq, r.events])).toEqual([
      [3, 3],
      [16, 8],
      [24, 8],
      [27, 3],
    ]);
    const journal = await wholeJournal(store);
    expect(journal.map((e) => e.seq)).toEqual([1, 2, 3, ...Array.from({ length: 19 }, (_, i) => 9 + i)]);
    expect(chainProblems(journal)).toEqual([]);
    const timeline = await store.journalFor(input.id);
    expect(timeline).toEqual(journal);
    expect((await store.readJournal(10, 3)).map((e) => e.seq)).toEqual([11, 12, 13]);
  });

  it('concurrent writers: no two rows share a seq, and verify passes every chain', async () => {
    const url = await pg.freshDatabase();
    const stores = await Promise.all(
      Array.from({ length: 3 }, () => PostgresStore.open({ url, pool: { max: 4 } })),
    );
    opened.push(...stores);
    await Promise.all(
      stores.flatMap((store, s) =>
        Array.from({ length: 20 }, async (_, i) => {
          const input = claimInput({ state: 'dispatched', id: `exe_${s}_${i}` });
          await store.claim(input, { events: claimEvents(input) });
          await store.appendEvents([
            { kind: 'attached', executionId: input.id, requestRef: `a${i}` },
            { kind: 'attached', executionId: input.id, requestRef: `b${i}` },
          ]);
        }),
      ),
    );
    const report = await verifyStore({ kind: 'postgres', url }, { streams: ['activity'], heads: [] });
    expect(report.firstBad).toBeUndefined();
    expect(report.entries).toBe(300);
    const journal = await wholeJournal(stores[0]!);
    expect(journal).toHaveLength(300);
    expect(new Set(journal.map((e) => e.seq)).size).toBe(300);
    expect(chainProblems(journal)).toEqual([]);
  });

  it("rows written before migration 8 verify with the new ones after them, and version 7's append still works", async () => {
    const url = await pg.freshDatabase();
    const client = new pgDriver.Client({ connectionString: url });
    await client.connect();
    try {
      await migrate(client, { migrations: MIGRATIONS.filter((m) => m.version <= 7) });
      const old = async (events: ActivityEventInput[]) => {
        const { rows } = await client.query<{ chain: number }>('SELECT journal_register_chain() AS chain');
        await client.query('SELECT journal_append($1, $2, NULL, $3, $4, $5, $6, $7, $8, $9)', [
          'activity',
          rows[0]!.chain,
          events.map((e) => e.kind),
          events.map((e) => e.executionId ?? null),
          events.map((e) => e.actor ?? null),
          events.map((e) => e.tool ?? null),
          events.map((e) => e.requestRef ?? null),
          events.map(eventDetailText),
          events.map(envelopeTail),
        ]);
      };
      await old(HOSTILE);
      const store = await PostgresStore.open({ url });
      opened.push(store);
      await store.appendEvents(HOSTILE);
      // A gateway not yet upgraded, on the migrated schema: its one-event rows take a block each.
      await old([{ kind: 'received', executionId: 'exe_2' }]);
      await store.appendEvents([{ kind: 'received', executionId: 'exe_2' }]);
      const rows = (await client.query<RawRow>(`${ROWS} FROM activity_journal ORDER BY seq`)).rows;
      expect(rows.map((r) => [r.seq, r.events])).toEqual([
        [1, null],
        [2, null],
        [3, null],
        [13, 3],
        [19, null],
        [27, 1],
      ]);
      // The journal alone: these events name no execution of the table.
      const report = await verifyJournal(postgresJournalRows(url, 'activity'), {
        registry: await postgresRegistry(url, 'activity'),
      });
      expect(report).toMatchObject({ ok: true, entries: 8 });
      expect((await store.journalFor('exe_2')).map((e) => e.seq)).toEqual([19, 27]);
      expect((await store.journalFor('exe_1')).map((e) => e.seq)).toEqual([1, 2, 3, 11, 12, 13]);
    } finally {
      await client.end();
    }
  });
});

describe('the execution search in rows of several events', () => {
  const { open, sql } = usePostgresSchemas(() => pg);

  it('finds an execution by a request ref inside a row, and survives a ref PostgreSQL cannot read back', async () => {
    const store = await open();
    const a = claimInput({ state: 'dispatched' });
    await store.claim(a, {
      events: [{ kind: 'received', executionId: a.id, requestRef: 'req:lone' }, ...claimEvents(a).slice(1)],
    });
    const b = claimInput({ state: 'dispatched' });
    // A ref with U+0000 (JSON's \u0000), beside the same ref: ->> refuses to read it back as text.
    await store.claim(b, {
      events: [
        { kind: 'received', executionId: b.id, requestRef: 'req:\u0000' },
        { kind: 'attached', executionId: b.id, requestRef: 'req:lone' },
        ...claimEvents(b).slice(1),
      ],
    });
    expect((await store.list({ text: 'req:lone' })).map((r) => r.id)).toContain(a.id);
    // What journal_row_refs guards against: ->> refuses that ref, and would fail the whole search.
    const text = rowEventsText([{ kind: 'received', executionId: b.id, requestRef: 'req:\u0000' }]);
    await expect(sql('SELECT e ->> 4 FROM json_array_elements($1::json) AS e', [text])).rejects.toThrow(
      /unsupported Unicode escape/,
    );
    expect(await sql('SELECT * FROM journal_row_refs($1)', [text])).toEqual([]);
    expect(await store.list({ text: 'req:none' })).toEqual([]);
  });
});
