import { html } from 'hono/html';
import { expirePending } from '../../approval/decide.js';
import { type ApprovalView, approvalView } from '../../approval/view.js';
import type { ExecutionStore } from '../../store/types.js';
import { relative } from '../format.js';
import { badge, copyable, type Html, when } from '../layout.js';

/** What a decision said it decided: shown after it, so the operator reads what was approved. */
export interface DecisionNotice {
  ok: boolean;
  text: string;
  /** The request and arguments digest decided (when one was). */
  decided?: { ref: string; argumentsDigest: string; decision: string };
}

/**
 * The approvals queue: what an approver sees (approval/view.ts), with approve
 * and deny. Each decision form names its request and the arguments digest the
 * row shows; the page refreshes without moving rows (live-script.ts), so the
 * request under the pointer is the one the click opens. A click decides
 * nothing yet: it opens the confirmation (decide.ts), which shows the whole
 * record and takes the decision.
 */
export async function approvalsPage(
  store: ExecutionStore,
  all: boolean,
  notice?: DecisionNotice,
): Promise<Html> {
  // As `idem approvals list`: requests past their time are ended first, so they show as what they are.
  await expirePending(store);
  const now = await store.now();
  const views: ApprovalView[] = [];
  for (const request of await store.listApprovals({ pending: !all, limit: 200 })) {
    const record = await store.get(request.executionId);
    if (record) views.push(approvalView(record, request));
  }
  return html`<h1>Approvals</h1>
${notice ? noticeOf(notice) : ''}
<p>${all ? html`All requests. <a href="/approvals?all=1">Reload</a> · <a href="/approvals">Pending only</a>` : html`Pending requests. <a href="/approvals">Reload</a> · <a href="/approvals?all=1">Show decided ones too</a>`}</p>
<p class="news" id="approvals-news" data-news="0" aria-live="polite"></p>
<table id="approvals" data-rows>
<thead><tr><th>Ref · status</th><th>What · who · where</th><th>Arguments (redacted)</th><th>Requested (UTC)</th><th>Decide</th></tr></thead>
<tbody>${views.map((v) => row(v, now))}</tbody>
</table>
${views.length === 0 ? html`<p>Nothing is waiting for approval.</p>` : ''}`;
}

function row(v: ApprovalView, now: number): Html {
  return html`<tr data-ref="${v.ref}" data-state="${v.decision ?? 'pending'}" data-digest="${v.argumentsDigest}">
  <td>${copyable(v.ref, `/executions/${v.ref}`)}
    <div data-cell="status">${badge(v.decision ?? 'awaiting_approval')}${v.decidedBy ? html`<br><small>by ${v.decidedBy} via ${v.decidedVia}${v.reason ? ` (${v.reason})` : ''}</small>` : ''}</div>
    ${v.earlier ? html`<small>an earlier execution exists (${v.earlier}): approving does not tell whether it ran</small>` : ''}</td>
  <td><strong>${v.tool}</strong><br>${v.actor}<br><small class="muted">${v.channel}:${v.target}${v.credential ? ` · credential "${v.credential}"` : ''}</small></td>
  <td><div class="argbox">${v.arguments}</div><small class="muted mono" title="${v.argumentsDigest}">digest ${shortDigest(v.argumentsDigest)}</small></td>
  <td>${when(v.requestedAt, now)}<br><small class="muted">expires ${relative(v.expiresAt, now)}</small></td>
  <td>${
    v.decision === null
      ? html`<form method="get" action="/approvals/${v.ref}/decide" class="decide-actions">
    <input type="hidden" name="digest" value="${v.argumentsDigest}">
    <button type="submit" name="decision" value="approved">Approve…</button>
    <button type="submit" name="decision" value="denied" class="deny">Deny…</button>
  </form>`
      : '–'
  }</td>
</tr>`;
}

function noticeOf(notice: DecisionNotice): Html {
  const decided = notice.decided;
  return html`<div class="notice ${notice.ok ? '' : 'error'}" role="${notice.ok ? 'status' : 'alert'}" ${
    decided
      ? html`data-decided-ref="${decided.ref}" data-decided-digest="${decided.argumentsDigest}" data-decision="${decided.decision}"`
      : ''
  }>${notice.text}</div>`;
}

/** Enough of a digest to compare by eye; the full value is in the title and the form. */
function shortDigest(digest: string): string {
  return digest.length > 19 ? `${digest.slice(0, 19)}…` : digest;
}
