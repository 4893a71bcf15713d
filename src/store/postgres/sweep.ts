import { EXPIRE, sweepEvents } from '../sweep.js';
import type { SweepResult } from '../types.js';
import { APPROVAL_SQL } from './approval-sql.js';
import type { JournalChains } from './journal-chains.js';
import { journalParams } from './journal-rows.js';
import { type ExecutionRow, SQL, toRecord, wholeMs } from './sql.js';
import { type Connections, query } from './transactions.js';

/**
 * The sweep (ExecutionStore.sweep; what it does is store/sweep.ts) as PostgreSQL's statements:
 * one transaction; a dry run changes nothing.
 */
export async function writeSweep(
  db: Connections,
  chains: JournalChains,
  options: { retentionMs: number; dryRun?: boolean },
): Promise<SweepResult> {
  const retentionMs = wholeMs(options.retentionMs);
  if (options.dryRun) {
    return db.use(async (client) => {
      const [stale, trimmable] = await Promise.all([
        query<ExecutionRow>(SQL.wouldExpire, [])(client),
        query<{ n: number }>(SQL.wouldTrim, [retentionMs])(client),
      ]);
      return {
        expired: stale.rows.map((row) => ({ ...toRecord(row), state: EXPIRE.to })),
        trimmed: trimmable.rows[0]?.n ?? 0,
      };
    });
  }
  // A chain is held for the whole transaction: which rows expire is known only inside it.
  return chains.holding((chain) =>
    db.transaction(async (tx) => {
      const trim = query<{ id: string }>(SQL.trim, [retentionMs])(tx.db);
      const trimSessions = query(APPROVAL_SQL.trimSessions, [retentionMs])(tx.db);
      const expire = query<ExecutionRow>(SQL.expire, [])(tx.db);
      const [trimmed, expired] = await Promise.all([trim, expire, trimSessions]);
      const ids = trimmed.rows.map((row) => row.id);
      const swept = sweepEvents(expired.rows, ids, retentionMs);
      if (swept.events.length > 0) {
        tx.defer(query(SQL.append.sync, ['activity', ...journalParams(swept.events, chain)])(tx.db));
      }
      return { expired: swept.expired.map(toRecord), trimmed: ids.length };
    }),
  );
}
