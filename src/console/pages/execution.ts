import { html } from 'hono/html';
import type { JsonValue } from '../../identity/canonical.js';
import { tasksIn } from '../../journal/task-events.js';
import type { ExecutionStore } from '../../store/types.js';
import { prettyJson } from '../format.js';
import { badge, copyable, csrfField, type Html, when } from '../layout.js';
import { callCounts, lifeOf, lifePicture, lifeSummary } from './life.js';

/** A stored text shown whole: indented when it is JSON. */
export function jsonBlock(text: string, id?: string): Html {
  const shown = prettyJson(text);
  return html`<pre class="json" ${id ? html`id="${id}"` : ''} data-json="${String(shown.json)}">${shown.text}</pre>`;
}

/** A journal entry's detail as key: value lines (a nested value as indented JSON). */
function detailOf(detail: Record<string, JsonValue>): Html {
  const entries = Object.entries(detail);
  if (entries.length === 0) return html`<span class="muted">–</span>`;
  return html`<dl class="kv">${entries.map(
    ([key, value]) =>
      html`<dt>${key}</dt><dd>${typeof value === 'object' && value !== null ? html`<pre class="json">${JSON.stringify(value, null, 2)}</pre>` : String(value)}</dd>`,
  )}</dl>`;
}

/** One execution: its life as a picture, its record, what it answered, the requests that carried it, its journal. */
export async function executionPage(
  store: ExecutionStore,
  ref: string,
  csrf: string,
  notice?: { ok: boolean; text: string },
): Promise<Html | undefined> {
  const [record, timeline, approval, now] = await Promise.all([
    store.get(ref),
    store.journalFor(ref),
    store.getApproval(ref),
    store.now(),
  ]);
  if (!record && timeline.length === 0) return undefined;
  const requests = [...new Set(timeline.map((e) => e.requestRef).filter((r): r is string => r !== null))];
  const accepted = timeline.find(
    (e) => e.kind === 'accepted' && typeof e.detail.channel === 'string',
  )?.detail;
  const resolvable = record && (record.state === 'unknown' || record.state === 'dispatched');
  const decidable = record?.state === 'awaiting_approval' && approval && approval.decision === null;
  // The MCP tasks it is, beside its ref (docs/tasks.md).
  const tasks = tasksIn(timeline);
  const life = lifeOf(timeline, now);
  const counts = callCounts(timeline);
  return html`<h1>Execution ${copyable(ref)}</h1>
${notice ? html`<div class="notice ${notice.ok ? '' : 'error'}" role="status">${notice.text}</div>` : ''}
<div class="life" id="life-panel">${lifePicture(life)}<p class="summary" id="life-summary">${lifeSummary(life, counts)}</p></div>
${
  decidable && record
    ? html`<form method="get" action="/approvals/${ref}/decide" class="panel confirm" id="decide">
  <strong>Waiting for an approval</strong> since ${when(approval.requestedAt, now)}; it expires ${when(approval.expiresAt, now)}.
  <input type="hidden" name="digest" value="${record.requestDigest ?? record.fingerprint}">
  <div class="decide-actions">
    <button type="submit" name="decision" value="approved">Approve…</button>
    <button type="submit" name="decision" value="denied" class="deny">Deny…</button>
    <span class="muted">Both show the request again and ask you to confirm.</span>
  </div>
</form>`
    : ''
}
${
  record
    ? html`<dl class="record">
  <dt>State</dt><dd id="state">${badge(record.state)} <span class="muted">replay class ${record.replay}</span></dd>
  <dt>Tool</dt><dd>${record.tool}</dd>
  <dt>Where</dt><dd>${accepted ? `${String(accepted.channel)}:${String(accepted.target)}${accepted.credential ? ` with credential "${String(accepted.credential)}"` : ''}` : '–'}</dd>
  <dt>Actor</dt><dd>${record.actor}</dd>
  <dt>Session</dt><dd>${record.session ? copyable(record.session, `/sessions/${encodeURIComponent(record.session)}`) : '–'}</dd>
  <dt>Created</dt><dd>${when(record.createdAt, now)}</dd>
  <dt>Dispatched</dt><dd>${when(record.dispatchedAt, now)}</dd>
  <dt>Delivered</dt><dd>${when(record.deliveredAt, now)}</dd>
  <dt>Attempts · replays</dt><dd id="counts"><span data-attempts="${counts.attempts}">${counts.attempts}</span> · <span data-replays="${counts.replays}">${counts.replays}</span></dd>
  <dt>Arguments</dt><dd>${jsonBlock(record.argumentsPreview, 'arguments')}</dd>
  <dt>Note</dt><dd>${record.note ?? '–'}</dd>
  <dt>Fingerprint</dt><dd>${copyable(record.fingerprint)}</dd>
  <dt>MCP tasks</dt><dd class="mono" id="tasks">${tasks.length ? tasks.map((t) => `${t.taskId} (${t.actor ?? '–'})`).join(', ') : '–'}</dd>
  <dt>Upstream task</dt><dd class="mono">${record.upstreamTask ? `${record.upstreamTask.taskId} of ${record.upstreamTask.upstream}` : '–'}</dd>
</dl>
<h2>Outcome</h2>
<div class="panel" id="outcome">${
        record.outcome
          ? html`${record.outcome.result.isError ? html`<p class="bad">error result</p>` : ''}${jsonBlock(
              (record.outcome.result.content ?? [])
                .map((c) => (c.type === 'text' ? c.text : `[${c.type}]`))
                .join('\n'),
            )}`
          : html`<span class="muted">none yet</span>`
      }</div>`
    : html`<p>Trimmed from the store by retention; its journal remains.</p>`
}
${
  resolvable
    ? html`<h2>Resolve</h2>
<form method="post" action="/executions/${ref}/resolve" class="panel" id="resolve">
  ${csrfField(csrf)}
  <p>Only an unknown outcome (or a dispatch whose holder is gone) can be resolved. Say what you checked.</p>
  <label><input type="radio" name="as" value="completed" required> it happened (completed)</label>
  <label><input type="radio" name="as" value="failed"> it did not happen (failed)</label>
  <p><textarea name="note" rows="2" cols="60" required placeholder="what you checked"></textarea></p>
  <button type="submit">Resolve</button>
</form>`
    : ''
}
<h2>${requests.length} request(s) carried it</h2>
<ul id="requests">${requests.map((r) => html`<li>${copyable(r)}</li>`)}</ul>
<h2>Journal</h2>
<table id="timeline">
<thead><tr><th>Seq</th><th>When (UTC)</th><th>Event</th><th>Actor</th><th>Request</th><th>Detail</th></tr></thead>
<tbody>${timeline.map(
    (e) =>
      html`<tr><td>${e.seq}</td><td class="when" title="${new Date(e.at).toISOString()}">${new Date(e.at).toISOString().slice(0, 23).replace('T', ' ')}</td><td>${e.kind}</td><td>${e.actor ?? '–'}</td><td class="mono">${e.requestRef ?? '–'}</td><td>${detailOf(e.detail)}</td></tr>`,
  )}</tbody>
</table>`;
}
