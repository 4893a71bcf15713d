import type { ReplayClass } from '../contracts/contract.js';
import type { ActivityEntry, ActivityKind } from '../journal/events.js';
import type { ExecutionState } from '../journal/states.js';
import type {
  ApprovalChannel,
  ApprovalDecision,
  ApprovalRequest,
  ApprovalRequestPolicy,
  ExecutionRecord,
} from './types.js';

/**
 * An execution row as both SQL stores lay it out (snake_case columns,
 * times in ms, outcome as JSON text); each store adds its own fingerprint
 * encoding (of `fingerprint` and `request_digest`) and bookkeeping columns.
 */
export interface ExecutionColumns {
  id: string;
  actor: string;
  tool: string;
  session: string | null;
  replay: ReplayClass;
  state: ExecutionState;
  created_at: number;
  updated_at: number;
  attach_until: number;
  dispatched_at: number | null;
  deadline_at: number | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  outcome: string | null;
  delivered_at: number | null;
  arguments_preview: string;
  note: string | null;
}

export function recordFromColumns(
  row: ExecutionColumns,
  fingerprint: string,
  requestDigest: string | null,
  readAt: number,
): ExecutionRecord {
  return {
    id: row.id,
    fingerprint,
    requestDigest,
    actor: row.actor,
    tool: row.tool,
    session: row.session,
    replay: row.replay,
    state: row.state,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    attachUntil: row.attach_until,
    dispatchedAt: row.dispatched_at,
    deadlineAt: row.deadline_at,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    outcome: row.outcome === null ? null : JSON.parse(row.outcome),
    deliveredAt: row.delivered_at,
    argumentsPreview: row.arguments_preview,
    note: row.note,
    readAt,
  };
}

/** A journal row as both SQL stores keep it: detail as the canonical JSON text its hash covers. */
export interface JournalColumns {
  seq: number;
  at: number;
  kind: ActivityKind;
  execution_id: string | null;
  actor: string | null;
  tool: string | null;
  request_ref: string | null;
  detail: string;
  prev_hash: string;
  hash: string;
  /** PostgreSQL: the writer's chain (0 for rows from before chains). SQLite has one chain and no column. */
  chain?: number;
}

export function entryFromColumns(row: JournalColumns): ActivityEntry {
  return {
    seq: row.seq,
    at: row.at,
    kind: row.kind,
    executionId: row.execution_id,
    actor: row.actor,
    tool: row.tool,
    requestRef: row.request_ref,
    detail: JSON.parse(row.detail),
    prevHash: row.prev_hash,
    hash: row.hash,
    ...(row.chain ? { chain: row.chain } : {}),
  };
}

/** An approval request as both SQL stores keep it. */
export interface ApprovalColumns {
  execution_id: string;
  policy: ApprovalRequestPolicy;
  channel: string;
  target: string;
  credential_ref: string | null;
  earlier: string | null;
  requested_at: number;
  expires_at: number;
  decision: ApprovalDecision | null;
  decided_by: string | null;
  decided_via: ApprovalChannel | null;
  decided_at: number | null;
  reason: string | null;
}

export function approvalFromColumns(row: ApprovalColumns): ApprovalRequest {
  return {
    executionId: row.execution_id,
    policy: row.policy,
    channel: row.channel,
    target: row.target,
    credentialRef: row.credential_ref,
    earlier: row.earlier,
    requestedAt: Number(row.requested_at),
    expiresAt: Number(row.expires_at),
    decision: row.decision,
    decidedBy: row.decided_by,
    decidedVia: row.decided_via,
    decidedAt: row.decided_at === null ? null : Number(row.decided_at),
    reason: row.reason,
  };
}
