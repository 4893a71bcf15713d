import type Database from 'better-sqlite3';
import { buildEntry, GENESIS_HASH } from '../../journal/chain.js';
import { LEGACY_ACCEPTED } from '../../journal/states.js';
import { UPGRADED_TO, upgradeEvent } from '../legacy-accepted.js';

/**
 * Migration 8's step (store/legacy-accepted.ts) on a schema of version 7, inside the migration's
 * transaction: each `accepted` row becomes `authorized`, journaled, its entry named on the row
 * (journal_seqs, migration 7). Self-contained — its own statements, on the columns version 7
 * has — so that later versions of the store's statements cannot change what it does.
 */
export function upgradeAccepted(db: Database.Database, now = Date.now()): void {
  const rows = db
    .prepare<[string], { id: string; actor: string; tool: string }>(
      'SELECT id, actor, tool FROM executions WHERE state = ? ORDER BY id',
    )
    .all(LEGACY_ACCEPTED);
  if (rows.length === 0) return;
  const head = db
    .prepare<[], { seq: number; hash: string; at: number }>(
      'SELECT seq, hash, at FROM activity_journal ORDER BY seq DESC LIMIT 1',
    )
    .get();
  const at = Math.max(now, head?.at ?? 0);
  let seq = head?.seq ?? 0;
  let prevHash = head?.hash ?? GENESIS_HASH;
  const append = db.prepare(`
    INSERT INTO activity_journal (seq, at, kind, execution_id, actor, tool, request_ref, detail, prev_hash, hash)
    VALUES (@seq, @at, @kind, @executionId, @actor, @tool, @requestRef, @detail, @prevHash, @hash)`);
  const upgrade = db.prepare(`
    UPDATE executions SET state = @state, updated_at = @at,
      journal_seqs = CASE WHEN journal_seqs IS NULL THEN @seq ELSE journal_seqs || ',' || @seq END
    WHERE id = @id`);
  for (const row of rows) {
    const { entry, detailText } = buildEntry(upgradeEvent(row), ++seq, at, prevHash);
    const { kind, executionId, actor, tool, requestRef, hash } = entry;
    append.run({ seq, at, kind, executionId, actor, tool, requestRef, detail: detailText, prevHash, hash });
    upgrade.run({ state: UPGRADED_TO, at, seq: String(seq), id: row.id });
    prevHash = hash;
  }
}
