import { html } from 'hono/html';
import { expirePending } from '../../approval/decide.js';
import { type ApprovalView, approvalView } from '../../approval/view.js';
import type { ExecutionStore } from '../../store/types.js';
import { badge, csrfField, type Html, time } from '../layout.js';

/** The approvals queue: what an approver sees (approval/view.ts), with approve and deny. */
export async function approvalsPage(
  store: ExecutionStore,
  csrf: string,
  all: boolean,
  notice?: { ok: boolean; text: string },
): Promise<Html> {
  // As `idem approvals list`: requests past their time are ended first, so they show as what they are.
  await expirePending(store);
  const views: ApprovalView[] = [];
  for (const request of await store.listApprovals({ pending: !all, limit: 200 })) {
    const record = await store.get(request.executionId);
    if (record) views.push(approvalView(record, request));
  }
  return html`<h1>Approvals</h1>
${notice ? html`<div class="notice ${notice.ok ? '' : 'error'}" role="status">${notice.text}</div>` : ''}
<p>${all ? html`All requests. <a href="/approvals">Pending only</a>` : html`Pending requests. <a href="/approvals?all=1">Show decided ones too</a>`}</p>
<table id="approvals">
<thead><tr><th>Ref</th><th>Status</th><th>Tool</th><th>Actor</th><th>Target</th><th>Arguments (redacted)</th><th>Requested</th><th>Expires</th><th>Decide</th></tr></thead>
<tbody>${views.map(
    (v) => html`<tr data-ref="${v.ref}">
  <td class="mono"><a href="/executions/${v.ref}">${v.ref}</a>${v.earlier ? html`<br><small>an earlier execution exists (${v.earlier}): approving does not tell whether it ran</small>` : ''}</td>
  <td>${badge(v.decision ?? 'awaiting_approval')}${v.decidedBy ? html`<br><small>by ${v.decidedBy} via ${v.decidedVia}${v.reason ? ` (${v.reason})` : ''}</small>` : ''}</td>
  <td>${v.tool}</td><td>${v.actor}</td>
  <td>${v.channel}:${v.target}${v.credential ? html`<br><small>credential "${v.credential}"</small>` : ''}</td>
  <td class="mono">${v.arguments}</td>
  <td>${time(v.requestedAt)}</td><td>${time(v.expiresAt)}</td>
  <td>${
    v.decision === null
      ? html`<form method="post" action="/approvals/${v.ref}/decide">
    ${csrfField(csrf)}
    <input type="text" name="reason" placeholder="reason" maxlength="500">
    <button type="submit" name="decision" value="approved">Approve</button>
    <button type="submit" name="decision" value="denied" class="deny">Deny</button>
  </form>`
      : '–'
  }</td>
</tr>`,
  )}</tbody>
</table>
${views.length === 0 ? html`<p>Nothing is waiting for approval.</p>` : ''}`;
}
