import { html } from 'hono/html';
import { EXECUTION_STATES, type ExecutionState, isExecutionState } from '../../executions/states.js';
import { tasksIn } from '../../journal/task-events.js';
import type { ExecutionRecord, ExecutionStore } from '../../store/types.js';
import { badge, csrfField, type Html, time } from '../layout.js';

/** The Executions page: filters, counts per state, the ones needing a human first. */

export interface ExecutionFilters {
  state?: ExecutionState;
  tool?: string;
  actor?: string;
  session?: string;
  /** Minutes back from now. */
  sinceMinutes?: number;
}

/** Reads the filters from a query string; anything malformed is dropped, not trusted. */
export function executionFilters(query: Record<string, string | undefined>): ExecutionFilters {
  const text = (v: string | undefined) => (v && v.length <= 200 ? v : undefined);
  const minutes = Number(query.since);
  return {
    ...(isExecutionState(query.state) ? { state: query.state } : {}),
    ...(text(query.tool) ? { tool: query.tool } : {}),
    ...(text(query.actor) ? { actor: query.actor } : {}),
    ...(text(query.session) ? { session: query.session } : {}),
    ...(Number.isInteger(minutes) && minutes > 0 ? { sinceMinutes: minutes } : {}),
  };
}

/** Most a page lists; the filters narrow it. */
const PAGE_LIMIT = 500;

/** What needs a human comes first: unknown outcomes (reviews among them), then approvals; then newest. */
const URGENCY: Partial<Record<ExecutionState, number>> = { unknown: 0, awaiting_approval: 1 };

export function byUrgency(a: ExecutionRecord, b: ExecutionRecord): number {
  const ua = URGENCY[a.state] ?? 2;
  const ub = URGENCY[b.state] ?? 2;
  return ua !== ub ? ua - ub : b.createdAt - a.createdAt;
}

export async function executionsPage(store: ExecutionStore, filters: ExecutionFilters): Promise<Html> {
  const now = await store.now();
  const since = filters.sinceMinutes ? now - filters.sinceMinutes * 60_000 : undefined;
  const narrowed = {
    ...(filters.tool ? { tool: filters.tool } : {}),
    ...(filters.actor ? { actor: filters.actor } : {}),
    ...(since !== undefined ? { since } : {}),
  };
  const counts = await Promise.all(
    EXECUTION_STATES.map(async (state) => {
      const records = await store.list({ ...narrowed, state, limit: 10_000 });
      const n = filters.session
        ? records.filter((r) => r.session === filters.session).length
        : records.length;
      return [state, n] as const;
    }),
  );
  const records = (
    await store.list({ ...narrowed, ...(filters.state ? { state: filters.state } : {}), limit: PAGE_LIMIT })
  )
    .filter((r) => !filters.session || r.session === filters.session)
    .sort(byUrgency);
  const link = (state: ExecutionState | undefined) => {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries({ ...filters, state })) {
      if (value !== undefined) query.set(key === 'sinceMinutes' ? 'since' : key, String(value));
    }
    return `/executions?${query}`;
  };
  return html`<h1>Executions</h1>
<div class="counts">
  ${counts.map(
    ([state, n]) =>
      html`<a href="${link(state)}" class="${n > 0 && (state === 'unknown' || state === 'awaiting_approval') ? 'attention' : ''}" data-state="${state}"><strong>${n}</strong>${state}</a>`,
  )}
</div>
<form class="filters" method="get" action="/executions">
  <label>State <select name="state"><option value="">any</option>${EXECUTION_STATES.map(
    (s) => html`<option value="${s}" ${filters.state === s ? 'selected' : ''}>${s}</option>`,
  )}</select></label>
  <label>Tool <input name="tool" value="${filters.tool ?? ''}"></label>
  <label>Actor <input name="actor" value="${filters.actor ?? ''}"></label>
  <label>Session <input name="session" value="${filters.session ?? ''}"></label>
  <label>Since <select name="since">${[
    ['', 'any time'],
    ['15', '15 min'],
    ['60', '1 hour'],
    ['1440', '24 hours'],
    ['10080', '7 days'],
  ].map(
    ([v, label]) =>
      html`<option value="${v}" ${String(filters.sinceMinutes ?? '') === v ? 'selected' : ''}>${label}</option>`,
  )}</select></label>
  <button type="submit">Filter</button>
</form>
<table id="executions">
<thead><tr><th>Ref</th><th>State</th><th>Tool</th><th>Actor</th><th>Session</th><th>Created</th><th>Arguments (redacted)</th></tr></thead>
<tbody>
${records.map(
  (r) => html`<tr data-ref="${r.id}">
  <td class="mono"><a href="/executions/${r.id}">${r.id}</a></td>
  <td>${badge(r.replay === 'review' && r.state === 'unknown' ? 'review' : r.state)}</td>
  <td>${r.tool}</td><td>${r.actor}</td>
  <td class="mono">${r.session ? html`<a href="/sessions/${encodeURIComponent(r.session)}">${r.session.slice(0, 12)}</a>` : '–'}</td>
  <td>${time(r.createdAt)}</td>
  <td class="mono">${r.argumentsPreview}</td>
</tr>`,
)}
</tbody>
</table>
${records.length === 0 ? html`<p>No executions match.</p>` : ''}`;
}

/** One execution: its record, where it went, its outcome, the requests that carried it, its timeline. */
export async function executionPage(
  store: ExecutionStore,
  ref: string,
  csrf: string,
  notice?: { ok: boolean; text: string },
): Promise<Html | undefined> {
  const [record, timeline] = await Promise.all([store.get(ref), store.journalFor(ref)]);
  if (!record && timeline.length === 0) return undefined;
  const requests = [...new Set(timeline.map((e) => e.requestRef).filter((r): r is string => r !== null))];
  const accepted = timeline.find(
    (e) => e.kind === 'accepted' && typeof e.detail.channel === 'string',
  )?.detail;
  const resolvable = record && (record.state === 'unknown' || record.state === 'dispatched');
  // The MCP tasks it is, beside its ref (docs/tasks.md).
  const tasks = tasksIn(timeline);
  return html`<h1>Execution <span class="mono">${ref}</span></h1>
${notice ? html`<div class="notice ${notice.ok ? '' : 'error'}" role="status">${notice.text}</div>` : ''}
${
  record
    ? html`<dl class="record">
  <dt>State</dt><dd id="state">${badge(record.state)}</dd>
  <dt>Tool</dt><dd>${record.tool}</dd>
  <dt>Where</dt><dd>${accepted ? `${String(accepted.channel)}:${String(accepted.target)}${accepted.credential ? ` with credential "${String(accepted.credential)}"` : ''}` : '–'}</dd>
  <dt>Actor</dt><dd>${record.actor}</dd>
  <dt>Session</dt><dd class="mono">${record.session ? html`<a href="/sessions/${encodeURIComponent(record.session)}">${record.session}</a>` : '–'}</dd>
  <dt>Replay class</dt><dd>${record.replay}</dd>
  <dt>Created</dt><dd>${time(record.createdAt)}</dd>
  <dt>Dispatched</dt><dd>${time(record.dispatchedAt)}</dd>
  <dt>Delivered</dt><dd>${time(record.deliveredAt)}</dd>
  <dt>Arguments</dt><dd class="mono">${record.argumentsPreview}</dd>
  <dt>Note</dt><dd>${record.note ?? '–'}</dd>
  <dt>Fingerprint</dt><dd class="mono">${record.fingerprint}</dd>
  <dt>MCP tasks</dt><dd class="mono" id="tasks">${tasks.length ? tasks.map((t) => `${t.taskId} (${t.actor ?? '–'})`).join(', ') : '–'}</dd>
  <dt>Upstream task</dt><dd class="mono">${record.upstreamTask ? `${record.upstreamTask.taskId} of ${record.upstreamTask.upstream}` : '–'}</dd>
</dl>
<h2>Outcome</h2>
<div class="panel mono" id="outcome">${
        record.outcome
          ? html`${record.outcome.result.isError ? html`<span class="bad">error result</span> ` : ''}${(
              record.outcome.result.content ?? []
            )
              .map((c) => (c.type === 'text' ? c.text : `[${c.type}]`))
              .join('\n')}`
          : 'none yet'
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
<ul class="mono">${requests.map((r) => html`<li>${r}</li>`)}</ul>
<h2>Timeline</h2>
<table id="timeline">
<thead><tr><th>Seq</th><th>When</th><th>Event</th><th>Actor</th><th>Request</th><th>Detail</th></tr></thead>
<tbody>${timeline.map(
    (e) =>
      html`<tr><td>${e.seq}</td><td>${time(e.at)}</td><td>${e.kind}</td><td>${e.actor ?? '–'}</td><td class="mono">${e.requestRef ?? '–'}</td><td class="mono">${JSON.stringify(e.detail)}</td></tr>`,
  )}</tbody>
</table>`;
}
