import { trimmedEvents } from '../../journal/trims.js';
import { leaseExpiredEvent } from '../lease.js';
import type { SweepResult } from '../types.js';
import { APPROVAL_SQL } from './approval-sql.js';
import { type JournalChains, journalParams } from './journal-chains.js';
import { type ExecutionRow, SQL, toRecord, wholeMs } from './sql.js';
import { type Connections, query } from './transactions.js';

/**
 * The sweep (ExecutionStore.sweep): dispatched executions whose holder is gone become
 * `unknown`, journaled as `lease_expired`; finished ones and approved sessions older than
 * the retention are trimmed. One transaction; a dry run changes nothing.
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
        expired: stale.rows.map((row) => ({ ...toRecord(row), state: 'unknown' as const })),
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
      // RETURNING gives no order; by id is creation order, as the journal should read.
      const rows = expired.rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const events = [
        ...rows.map(leaseExpiredEvent),
        // What the trim removed is journaled in the same transaction (journal/trims.ts).
        ...trimmedEvents(
          trimmed.rows.map((row) => row.id),
          retentionMs,
        ),
      ];
      if (events.length > 0) {
        tx.defer(query(SQL.append.sync, ['activity', ...journalParams(events, chain)])(tx.db));
      }
      return { expired: rows.map(toRecord), trimmed: trimmed.rows.length };
    }),
  );
}
