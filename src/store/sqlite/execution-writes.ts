import Database from 'better-sqlite3';
import { encodeOptional, sqliteFingerprint } from '../../identity/fingerprint-columns.js';
import { withOutcomeDigest } from '../../journal/outcome-digest.js';
import { withTrimJournaled } from '../../journal/trims.js';
import { holderChange } from '../lease.js';
import type { ClaimInput, ClaimOptions, ClaimResult, ExecutionRecord, TransitionInput } from '../types.js';
import type { ApprovalStatements } from './approval-sql.js';
import { appendJournal } from './journal-append.js';
import { type Statements, toRecord, wholeMs } from './sql.js';

// The claim and the transition of an execution, each the body of one IMMEDIATE transaction
// that sqlite-store.ts runs through group commit; `now` is read inside it.

export function writeClaim(
  sql: Statements,
  approvalSql: ApprovalStatements,
  now: number,
  input: ClaimInput,
  options: ClaimOptions,
): ClaimResult {
  const fingerprint = sqliteFingerprint.encode(input.fingerprint);
  if (options.replacing !== undefined) sql.retire.run(options.replacing, fingerprint);
  const inserted = sql.insert.run({
    id: input.id,
    fingerprint,
    requestDigest: encodeOptional(sqliteFingerprint, input.requestDigest),
    actor: input.actor,
    tool: input.tool,
    session: input.session,
    replay: input.replay,
    state: input.state,
    now,
    attachUntil: now + wholeMs(input.attachWindowMs),
    deadlineAt: input.state === 'dispatched' ? now + wholeMs(input.dispatchTimeoutMs ?? 0) : null,
    claimToken: input.claimToken,
    leaseOwner: input.leaseOwner,
    leaseExpiresAt: now + wholeMs(input.leaseMs),
    argumentsPreview: input.argumentsPreview,
  });
  // The row a claim of this intent finds: ours if the insert won, the holder's if not.
  // Read through the index every later claim will use: a claim that could not be found
  // again would let the next one dispatch a second time.
  const row = sql.findActive.get(fingerprint);
  if (inserted.changes === 1) {
    if (row?.id !== input.id) {
      throw new Database.SqliteError(
        `the claim of ${input.id} was written but cannot be read back`,
        'SQLITE_CORRUPT',
      );
    }
    if (input.approval && input.state === 'awaiting_approval') {
      const { credentialRef, expiresInMs, ...request } = input.approval;
      approvalSql.insert.run({
        id: input.id,
        ...request,
        credentialRef,
        now,
        expiresInMs: wholeMs(expiresInMs),
      });
    }
    appendJournal(sql, withTrimJournaled(input.id, options.events), now);
    return { won: true, record: toRecord(row, now) };
  }
  return { won: false, record: row && toRecord(row, now) };
}

export function writeTransition(
  sql: Statements,
  now: number,
  t: TransitionInput,
): ExecutionRecord | undefined {
  const update = t.release ? sql.transitionReleasing : sql.transition;
  const changed = update.run({
    id: t.id,
    from: JSON.stringify(t.from),
    to: t.to,
    now,
    token: t.token ?? null,
    requireStale: t.requireStale ? 1 : 0,
    checkLease: t.leaseExpiresAt === undefined ? 0 : 1,
    leaseExpiresAt: t.leaseExpiresAt ?? null,
    holder: holderChange(t.holder),
    holderToken: t.holder?.token ?? null,
    holderOwner: t.holder?.owner ?? null,
    holderLeaseMs: t.holder ? wholeMs(t.holder.leaseMs) : null,
    dispatchTimeoutMs: t.dispatchTimeoutMs === undefined ? null : wholeMs(t.dispatchTimeoutMs),
    outcome: t.outcome === undefined ? null : JSON.stringify(t.outcome),
    delivered: t.delivered ? 1 : 0,
    note: t.note ?? null,
  });
  if (changed.changes === 0) return undefined;
  const row = sql.get.get(t.id);
  if (!row) {
    throw new Database.SqliteError(
      `the transition of ${t.id} was written but cannot be read back`,
      'SQLITE_CORRUPT',
    );
  }
  appendJournal(sql, withOutcomeDigest(t.id, t.outcome, t.events), now);
  return toRecord(row, now);
}
