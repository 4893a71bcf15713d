import Database from 'better-sqlite3';
import { encodeOptional, sqliteFingerprint } from '../../identity/fingerprint-columns.js';
import { withOutcomeDigest } from '../../journal/outcome-digest.js';
import { withTrimJournaled } from '../../journal/trims.js';
import { holderChange } from '../lease.js';
import { recordFromColumns } from '../sql-columns.js';
import type { ClaimInput, ClaimOptions, ClaimResult, ExecutionRecord, TransitionInput } from '../types.js';
import type { ApprovalStatements } from './approval-sql.js';
import { buildJournal, takeTimeline, writeJournal } from './journal-append.js';
import { type ExecutionRow, type Statements, toRecord, wholeMs } from './sql.js';

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
  // Hashed before the insert, so the row is written with its timeline (no second statement);
  // wasted only on a lost claim, which appends nothing.
  const journal = buildJournal(sql, withTrimJournaled(input.id, options.events), now);
  const row: ExecutionRow = {
    id: input.id,
    fingerprint,
    request_digest: encodeOptional(sqliteFingerprint, input.requestDigest),
    active: 1,
    actor: input.actor,
    tool: input.tool,
    session: input.session,
    replay: input.replay,
    state: input.state,
    created_at: now,
    updated_at: now,
    attach_until: now + wholeMs(input.attachWindowMs),
    dispatched_at: input.state === 'dispatched' ? now : null,
    deadline_at: input.state === 'dispatched' ? now + wholeMs(input.dispatchTimeoutMs ?? 0) : null,
    claim_token: input.claimToken,
    lease_owner: input.leaseOwner,
    lease_expires_at: now + wholeMs(input.leaseMs),
    outcome: null,
    delivered_at: null,
    arguments_preview: input.argumentsPreview,
    note: null,
    upstream_task: null,
  };
  const inserted = sql.insert.run({
    id: row.id,
    fingerprint,
    requestDigest: row.request_digest,
    actor: row.actor,
    tool: row.tool,
    session: row.session,
    replay: row.replay,
    state: row.state,
    now,
    attachUntil: row.attach_until,
    deadlineAt: row.deadline_at,
    claimToken: row.claim_token,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    argumentsPreview: row.arguments_preview,
    journalSeqs: takeTimeline(journal, input.id),
  });
  if (inserted.changes === 1) {
    // Read back through the index every later claim will use: a claim that could not be found
    // again would let the next one dispatch a second time. The index alone answers (the rowid);
    // the record is the row as written, not read and decoded again.
    if (sql.activeRowid.get(fingerprint) !== inserted.lastInsertRowid) {
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
    if (journal) writeJournal(sql, journal);
    return { won: true, record: recordFromColumns(row, input.fingerprint, input.requestDigest ?? null, now) };
  }
  // The holder's row, the one a claim of this intent finds.
  const holder = sql.findActive.get(fingerprint);
  return { won: false, record: holder && toRecord(holder, now) };
}

export function writeTransition(
  sql: Statements,
  now: number,
  t: TransitionInput,
): ExecutionRecord | undefined {
  const update = t.release ? sql.transitionReleasing : sql.transition;
  // Hashed before the update, so the row takes its timeline in the same statement; wasted only
  // on a transition that changes nothing, which appends nothing.
  const journal = buildJournal(sql, withOutcomeDigest(t.id, t.outcome, t.events), now);
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
    journalSeqs: takeTimeline(journal, t.id),
  });
  if (changed.changes === 0) return undefined;
  const row = sql.get.get(t.id);
  if (!row) {
    throw new Database.SqliteError(
      `the transition of ${t.id} was written but cannot be read back`,
      'SQLITE_CORRUPT',
    );
  }
  if (journal) writeJournal(sql, journal);
  return toRecord(row, now);
}
