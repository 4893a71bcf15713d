import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { claimInput, newFingerprint } from '../../../test/support/claim-input.js';
import { chainProblems } from '../../../test/support/journal-chains.js';
import { useSqliteFiles } from '../../../test/support/sqlite-files.js';
import { StoreUnavailableError } from '../../errors.js';
import { buildEntry, GENESIS_HASH } from '../../journal/chain.js';
import { sqliteJournalCount } from '../../journal/sources.js';
import { verifySqliteJournal } from '../../journal/verify-parallel.js';
import { MIGRATIONS, migrate, SCHEMA_VERSION, schemaVersion } from './migrations.js';
import { journalColumnValues } from './sql.js';
import { SqliteStore } from './sqlite-store.js';

describe('SqliteStore', () => {
  const files = useSqliteFiles();
  const { opened } = files;

  describe('migrations', () => {
    it('are numbered 1, 2, 3, … in order', () => {
      expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
      expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
    });

    it('are applied once: reopening changes nothing', async () => {
      await (await SqliteStore.open({ path: files.path })).close();
      const schema = () => {
        const db = new Database(files.path, { readonly: true });
        try {
          return {
            version: schemaVersion(db),
            objects: db.prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY name').all(),
          };
        } finally {
          db.close();
        }
      };
      const first = schema();
      expect(first.version).toBe(SCHEMA_VERSION);
      await (await SqliteStore.open({ path: files.path })).close();
      await (await SqliteStore.open({ path: files.path })).close();
      expect(schema()).toEqual(first);
    });

    it('apply only what is missing, in order, and roll a failing step back whole', () => {
      const db = new Database(':memory:');
      opened.push(db);
      const steps = [
        { version: 1, name: 'a', sql: 'CREATE TABLE a (x INTEGER);' },
        { version: 2, name: 'b', sql: 'CREATE TABLE b (x INTEGER);' },
      ];
      expect(migrate(db, steps.slice(0, 1))).toBe(1);
      expect(migrate(db, steps)).toBe(2);
      expect(migrate(db, steps)).toBe(2);
      const broken = [
        ...steps,
        { version: 3, name: 'c', sql: 'CREATE TABLE c (x INTEGER); CREATE TABLE a (y);' },
      ];
      expect(() => migrate(db, broken)).toThrow(/already exists/);
      expect(schemaVersion(db)).toBe(2);
      expect(db.prepare("SELECT name FROM sqlite_schema WHERE name = 'c'").get()).toBeUndefined();
    });

    it('bring a file from before request digests (schema 2) up to date: its rows read with none', async () => {
      const db = new Database(files.path);
      migrate(
        db,
        MIGRATIONS.filter((m) => m.version <= 2),
      );
      db.prepare(`
        INSERT INTO executions (id, fingerprint, active, actor, tool, session, replay, state, created_at,
          updated_at, attach_until, arguments_preview)
        VALUES ('exe_old', 'fp_old', 1, 'a', 't', NULL, 'keyed', 'completed', 1, 1, 2, '{}')`).run();
      db.close();

      const store = await SqliteStore.open({ path: files.path });
      try {
        expect(await store.get('exe_old')).toMatchObject({ id: 'exe_old', requestDigest: null });
        const requestDigest = newFingerprint();
        const fresh = await store.claim(claimInput({ requestDigest }));
        expect(fresh.record?.requestDigest).toBe(requestDigest);
      } finally {
        await store.close();
      }
    });

    it('bring a file from before tasks (schema 4) up to date: its rows kept, with no upstream task, and tasks open on them', async () => {
      const db = new Database(files.path);
      migrate(
        db,
        MIGRATIONS.filter((m) => m.version <= 4),
      );
      db.prepare(`
        INSERT INTO executions (id, fingerprint, active, actor, tool, session, replay, state, created_at,
          updated_at, attach_until, arguments_preview, outcome)
        VALUES ('exe_old', 'fp_old', 1, 'a', 't', NULL, 'keyed', 'completed', 1, 1, 2, '{}', '{"result":{"content":[]}}')`).run();
      db.prepare(`
        INSERT INTO approval_requests (execution_id, policy, channel, target, requested_at, expires_at)
        VALUES ('exe_old', 'every_call', 'mcp', 'up', 1, 2)`).run();
      db.close();

      const store = await SqliteStore.open({ path: files.path });
      try {
        expect(await store.get('exe_old')).toMatchObject({
          id: 'exe_old',
          state: 'completed',
          outcome: { result: { content: [] } },
          upstreamTask: null,
        });
        expect(await store.getApproval('exe_old')).toMatchObject({ executionId: 'exe_old', target: 'up' });
        const task = await store.openTask({
          taskId: 'tsk_old',
          executionId: 'exe_old',
          actor: 'a',
          generation: 'v1',
          ttlMs: null,
          pollIntervalMs: 1_000,
        });
        expect((await store.getTask('tsk_old'))?.task).toEqual(task);
        // Trimmed with its execution, as rows of schema 5 are.
        expect((await store.sweep({ retentionMs: 0 })).trimmed).toBe(1);
        expect(await store.getTask('tsk_old')).toBeUndefined();
      } finally {
        await store.close();
      }
      const after = new Database(files.path, { readonly: true });
      opened.push(after);
      expect(schemaVersion(after)).toBe(SCHEMA_VERSION);
      expect(after.prepare('SELECT COUNT(*) AS n FROM tasks').get()).toEqual({ n: 0 });
    });

    it("bring a file from before journal_seqs (schema 6) up to date: its executions' timelines read as before, without the index", async () => {
      const db = new Database(files.path);
      migrate(
        db,
        MIGRATIONS.filter((m) => m.version <= 6),
      );
      db.prepare(`
        INSERT INTO executions (id, fingerprint, active, actor, tool, session, replay, state, created_at,
          updated_at, attach_until, arguments_preview)
        VALUES ('exe_old', 'fp_old', 1, 'a', 't', NULL, 'keyed', 'completed', 1, 1, 2, '{}')`).run();
      const row = db.prepare(`
        INSERT INTO activity_journal (seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash)
        VALUES (?, 1, ?, ?, NULL, NULL, NULL, '{}', 'p', 'h')`);
      row.run(1, 'accepted', 'exe_old');
      row.run(2, 'accepted', 'exe_gone');
      row.run(3, 'outcome', 'exe_old');
      db.close();

      const store = await SqliteStore.open({ path: files.path });
      try {
        expect((await store.journalFor('exe_old')).map((e) => e.seq)).toEqual([1, 3]);
        expect((await store.journalFor('exe_gone')).map((e) => e.seq)).toEqual([2]);
        // Entries journaled after the upgrade join the same timeline.
        await store.appendEvents([{ kind: 'delivered', executionId: 'exe_old' }]);
        expect((await store.journalFor('exe_old')).map((e) => e.seq)).toEqual([1, 3, 4]);
      } finally {
        await store.close();
      }
      const after = new Database(files.path, { readonly: true });
      opened.push(after);
      expect(
        after.prepare("SELECT name FROM sqlite_schema WHERE name = 'activity_journal_execution'").get(),
      ).toBeUndefined();
      expect(after.prepare("SELECT journal_seqs FROM executions WHERE id = 'exe_old'").get()).toEqual({
        journal_seqs: '4',
      });
    });

    it('bring a file with the full state index (schema 7) up to date: unfinished rows counted and expired from the partial index, finished ones trimmed by rowid range', async () => {
      const db = new Database(files.path);
      migrate(
        db,
        MIGRATIONS.filter((m) => m.version <= 7),
      );
      const insert = db.prepare(`
        INSERT INTO executions (id, fingerprint, active, actor, tool, session, replay, state, created_at,
          updated_at, attach_until, lease_expires_at, arguments_preview)
        VALUES (?, ?, 1, 'a', 't', NULL, 'review', ?, ?, ?, 2, 3, '{}')`);
      insert.run('exe_1', 'fp_1', 'completed', 1, 1);
      insert.run('exe_2', 'fp_2', 'unknown', 2, 2);
      insert.run('exe_3', 'fp_3', 'dispatched', 3, 3);
      insert.run('exe_4', 'fp_4', 'failed', 4, 4);
      db.close();

      let now = 10;
      const store = await SqliteStore.open({ path: files.path, clock: () => now });
      try {
        const { counts } = await store.countStates(['unknown', 'dispatched', 'completed']);
        expect(counts).toEqual([
          { state: 'unknown', count: 1, oldestUpdatedAt: 2 },
          { state: 'dispatched', count: 1, oldestUpdatedAt: 3 },
          { state: 'completed', count: 1, oldestUpdatedAt: 1 },
        ]);
        now = 10_000;
        const swept = await store.sweep({ retentionMs: 5_000 });
        expect(swept.expired.map((r) => r.id)).toEqual(['exe_3']);
        expect(swept.trimmed).toBe(2);
        expect((await store.list()).map((r) => [r.id, r.state])).toEqual([
          ['exe_3', 'unknown'],
          ['exe_2', 'unknown'],
        ]);
      } finally {
        await store.close();
      }
      const after = new Database(files.path, { readonly: true });
      opened.push(after);
      const indexes = after
        .prepare(
          "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'executions' ORDER BY name",
        )
        .pluck()
        .all();
      expect(indexes).toContain('executions_unfinished');
      expect(indexes).not.toContain('executions_state_updated');
    });

    it('bring a journal of one event per row (schema 8) up to date: old rows kept as hashed, new rows of several events chained after them, one chain that verifies', async () => {
      const db = new Database(files.path);
      migrate(
        db,
        MIGRATIONS.filter((m) => m.version <= 8),
      );
      // What the code before migration 9 wrote: one row per event, hashed by journalEntryHash.
      const insert = db.prepare(
        'INSERT INTO activity_journal (seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      );
      let prev = GENESIS_HASH;
      for (const [seq, kind] of [
        [1, 'received'],
        [2, 'accepted'],
      ] as const) {
        const { entry, detailText } = buildEntry(
          { kind, executionId: 'exe_old', requestRef: 'req:1' },
          seq,
          1_000,
          prev,
        );
        insert.run(...journalColumnValues(entry, detailText).slice(0, 10));
        prev = entry.hash;
      }
      db.close();

      const store = await SqliteStore.open({ path: files.path });
      try {
        await store.appendEvents([
          { kind: 'dispatched', executionId: 'exe_old' },
          { kind: 'outcome', executionId: 'exe_old', detail: { state: 'completed' } },
          { kind: 'delivered', executionId: 'exe_old' },
        ]);
        const journal = await store.readJournal();
        expect(journal.map((e) => [e.seq, e.kind, e.rowEvents])).toEqual([
          [1, 'received', undefined],
          [2, 'accepted', undefined],
          [3, 'dispatched', 3],
          [4, 'outcome', 3],
          [5, 'delivered', 3],
        ]);
        expect(journal[2]?.prevHash).toBe(prev);
        expect(chainProblems(journal)).toEqual([]);
        expect(await store.journalHead()).toEqual({ seq: 5, hash: journal[4]?.hash });
      } finally {
        await store.close();
      }
      const after = new Database(files.path, { readonly: true });
      opened.push(after);
      expect(after.prepare('SELECT seq, events FROM activity_journal ORDER BY seq').all()).toEqual([
        { seq: 1, events: null },
        { seq: 2, events: null },
        { seq: 5, events: 3 },
      ]);
      // What verify's progress counts: events, not rows.
      expect(sqliteJournalCount(files.path)).toBe(5);
      for (const workers of [1, 2])
        expect(await verifySqliteJournal(files.path, 'activity', { workers, parallelFrom: 0 })).toMatchObject(
          {
            ok: true,
            entries: 5,
            lastSeq: 5,
          },
        );
    });

    it('refuse a file whose schema is newer than this code knows', async () => {
      await (await SqliteStore.open({ path: files.path })).close();
      const db = new Database(files.path);
      db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
      db.close();
      await expect(SqliteStore.open({ path: files.path })).rejects.toThrow(StoreUnavailableError);
      await expect(SqliteStore.open({ path: files.path })).rejects.toThrow(/newer than this Idem knows/);
    });
  });
});
