import { html } from 'hono/html';
import { expireIfDue } from '../../approval/decide.js';
import { loadApprovalView } from '../../approval/view.js';
import type { ExecutionRecord, ExecutionStore } from '../../store/types.js';
import { badge, copyable, csrfField, type Html, when } from '../layout.js';
import { jsonBlock } from './execution.js';

/**
 * The confirmation of an approve or deny: the original record of what is
 * decided on (DESIGN §7: tool, actor, where, the arguments and their digest,
 * its first dispatch and known outcome, and an earlier execution of the same
 * intent with its own), then Approve / Deny with a reason. The form names the
 * digest this page shows, so the decision lands on this request or on none.
 */

export type Decision = 'approved' | 'denied';

function outcomeLine(record: ExecutionRecord): string {
  if (!record.outcome)
    return record.state === 'unknown' ? 'unknown: it may or may not have happened' : 'none';
  const text = (record.outcome.result.content ?? [])
    .map((c) => (c.type === 'text' ? c.text : `[${c.type}]`))
    .join(' ');
  return `${record.outcome.result.isError ? 'error: ' : ''}${text.length > 300 ? `${text.slice(0, 300)}…` : text}`;
}

export async function decidePage(
  store: ExecutionStore,
  ref: string,
  csrf: string,
  asked: { decision?: Decision; digest?: string },
): Promise<Html | undefined> {
  const record = await store.get(ref);
  // A request past its time is ended first, so it shows as what it is.
  if (record?.state === 'awaiting_approval') await expireIfDue(store, record);
  const [view, now] = await Promise.all([loadApprovalView(store, ref), store.now()]);
  if (!view || !record) return undefined;
  const earlier = view.earlier ? await store.get(view.earlier) : undefined;
  const pending = view.decision === null;
  const changed = asked.digest !== undefined && asked.digest !== view.argumentsDigest;
  const verb = asked.decision === 'denied' ? 'Deny' : asked.decision === 'approved' ? 'Approve' : 'Decide on';
  return html`<h1>${verb} this request?</h1>
${
  changed
    ? html`<div class="notice error" role="alert" id="changed">The request under ${ref} is not the one you chose from (its arguments digest is now ${view.argumentsDigest}). Read it again below before you decide.</div>`
    : ''
}
${
  pending
    ? ''
    : html`<div class="notice error" role="alert" id="decided">Already decided: ${view.decision} by ${view.decidedBy ?? '?'} via ${view.decidedVia ?? '?'}${view.reason ? ` (${view.reason})` : ''}. Nothing more to decide.</div>`
}
<div class="panel confirm ${asked.decision === 'denied' ? 'denied' : ''}" id="original">
<dl class="record">
  <dt>Ref</dt><dd>${copyable(view.ref, `/executions/${view.ref}`)} ${badge(view.decision ?? view.state)}</dd>
  <dt>Tool</dt><dd id="confirm-tool"><strong>${view.tool}</strong></dd>
  <dt>Actor</dt><dd id="confirm-actor">${view.actor}${view.session ? html` <span class="muted">session ${view.session}</span>` : ''}</dd>
  <dt>Where</dt><dd>${view.channel}:${view.target}${view.credential ? ` with credential "${view.credential}"` : ''}</dd>
  <dt>Arguments</dt><dd>${jsonBlock(view.arguments, 'confirm-arguments')}</dd>
  <dt>Arguments digest</dt><dd id="confirm-digest">${copyable(view.argumentsDigest)}</dd>
  <dt>Requested</dt><dd>${when(view.requestedAt, now)} <span class="muted">(${view.policy.replace('_', ' ')})</span></dd>
  <dt>Expires</dt><dd>${when(view.expiresAt, now)}</dd>
  <dt>First dispatch</dt><dd id="confirm-dispatch">${record.dispatchedAt === null ? 'never: nothing has been sent to the target' : when(record.dispatchedAt, now)}</dd>
  <dt>Known outcome</dt><dd id="confirm-outcome">${record.dispatchedAt === null && !record.outcome ? 'none: it has not run' : outcomeLine(record)}</dd>
  ${
    view.earlier
      ? html`<dt>Earlier execution</dt><dd id="confirm-earlier">${copyable(view.earlier, `/executions/${view.earlier}`)} ${
          earlier
            ? html`${badge(earlier.state)} first dispatched ${when(earlier.dispatchedAt, now)}; outcome: ${outcomeLine(earlier)}`
            : html`<span class="muted">trimmed from the store; its journal remains</span>`
        }<br><small>Approving does not tell whether the earlier one ran.</small></dd>`
      : ''
  }
</dl>
${
  pending
    ? html`<form method="post" action="/approvals/${view.ref}/decide" id="confirm">
  ${csrfField(csrf)}
  <input type="hidden" name="digest" value="${view.argumentsDigest}">
  <p><label for="reason">Reason (journaled with your name)</label><br>
  <textarea id="reason" name="reason" rows="2" cols="70" maxlength="500" placeholder="what you checked"></textarea></p>
  <div class="decide-actions">
    <button type="submit" name="decision" value="approved">Approve</button>
    <button type="submit" name="decision" value="denied" class="deny">Deny</button>
    <a href="/approvals">Cancel</a>
    <span class="muted">${asked.decision === 'denied' ? 'Deny: the agent is told no, and it never runs.' : 'Approve: it runs once, when its caller asks again.'}</span>
  </div>
</form>`
    : html`<p><a href="/approvals">Back to the approvals</a></p>`
}
</div>`;
}
