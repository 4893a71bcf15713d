import { encodeOptional, postgresFingerprint } from '../../identity/fingerprint-columns.js';
import { withOutcomeDigest } from '../../journal/outcome-digest.js';
import { withTrimJournaled } from '../../journal/trims.js';
import { transitionMustSync } from '../durability.js';
import { holderChange } from '../lease.js';
import type { ClaimInput, ClaimOptions, ClaimResult, ExecutionRecord, TransitionInput } from '../types.js';
import { APPROVAL_SQL } from './approval-sql.js';
import type { JournalChains } from './journal-chains.js';
import { type ClaimedRow, claimedRecord, type ExecutionRow, SQL, toRecord, wholeMs } from './sql.js';
import { type Connections, last, query } from './transactions.js';

// The claim and the transition of an execution. Each holds a journal chain while it has
// events (journal-chains.ts), which the database appends in the statement that makes the change.

export async function writeClaim(
  db: Connections,
  chains: JournalChains,
  input: ClaimInput,
  options: ClaimOptions,
): Promise<ClaimResult> {
  const events = withTrimJournaled(input.id, options.events) ?? [];
  const fingerprint = postgresFingerprint.encode(input.fingerprint);
  const requestDigest = encodeOptional(postgresFingerprint, input.requestDigest);
  const won = (row: ClaimedRow): ClaimResult => ({
    won: true,
    record: claimedRecord(input, { fingerprint, requestDigest }, row),
  });
  const approval = input.state === 'awaiting_approval' ? input.approval : undefined;
  return chains.withEvents(events, async (journal) => {
    const claim = query<ClaimedRow>(SQL.claim, [
      events.length > 0,
      wholeMs(input.attachWindowMs),
      input.state === 'dispatched' ? wholeMs(input.dispatchTimeoutMs ?? 0) : null,
      wholeMs(input.leaseMs),
      input.id,
      fingerprint,
      input.actor,
      input.tool,
      input.session,
      input.replay,
      input.state,
      input.claimToken,
      input.leaseOwner,
      input.argumentsPreview,
      requestDigest,
      ...journal,
    ]);
    const holder = query<ExecutionRow>(SQL.findActive, [fingerprint]);

    // The common case: one statement, one round trip (autocommit), journal included. A lost
    // claim reads the holder on the same connection: under a storm of identical calls, a
    // loser queues for the pool once, not twice.
    if (options.replacing === undefined && approval === undefined) {
      return db.connection(async (client) => {
        const [row] = (await claim(client)).rows;
        if (row) return won(row);
        const [active] = (await holder(client)).rows;
        return { won: false, record: active && toRecord(active) };
      });
    }
    return db.transaction(async (tx) => {
      const retire =
        options.replacing === undefined ? [] : [query(SQL.retire, [options.replacing, fingerprint])(tx.db)];
      const [row] = (await last(retire, claim(tx.db))).rows;
      if (!row) {
        const read = holder(tx.db);
        // Whatever `replacing` retired stays active: a lost claim changes nothing.
        tx.rollback();
        const [active] = (await read).rows;
        return { won: false, record: active && toRecord(active) };
      }
      if (approval) {
        tx.defer(
          query(APPROVAL_SQL.insert, [
            input.id,
            approval.policy,
            approval.channel,
            approval.target,
            approval.credentialRef,
            approval.earlier,
            row.read_at,
            wholeMs(approval.expiresInMs),
          ])(tx.db),
        );
      }
      return won(row);
    });
  });
}

export async function writeTransition(
  db: Connections,
  chains: JournalChains,
  t: TransitionInput,
): Promise<ExecutionRecord | undefined> {
  const events = withOutcomeDigest(t.id, t.outcome, t.events) ?? [];
  return chains.withEvents(events, (journal) =>
    db.use(async (client) => {
      const [row] = (
        await query<ExecutionRow>(transitionMustSync(t) ? SQL.transition.sync : SQL.transition.lazy, [
          events.length > 0,
          t.id,
          t.to,
          t.from,
          t.token ?? null,
          t.requireStale === true,
          holderChange(t.holder),
          t.holder?.token ?? null,
          t.holder?.owner ?? null,
          t.holder ? wholeMs(t.holder.leaseMs) : null,
          t.dispatchTimeoutMs === undefined ? null : wholeMs(t.dispatchTimeoutMs),
          t.outcome === undefined ? null : JSON.stringify(t.outcome),
          t.delivered === true,
          t.note ?? null,
          t.release === true,
          t.leaseExpiresAt !== undefined,
          t.leaseExpiresAt ?? null,
          ...journal,
        ])(client)
      ).rows;
      return row && toRecord(row);
    }),
  );
}
