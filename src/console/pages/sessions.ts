import { html } from 'hono/html';
import { sessionsOf } from '../../journal/agent-runs.js';
import type { ExecutionStore } from '../../store/types.js';
import { badge, type Html, when } from '../layout.js';

/** Agent runs, as the sessions journal tells them (the same grouping as `idem sessions`). */

/** At most this many journal rows are read for the list: the newest runs. */
const JOURNAL_WINDOW = 50_000;

async function recentSessionEntries(store: ExecutionStore) {
  const head = await store.journalHead('sessions');
  return store.readJournal(Math.max(0, (head?.seq ?? 0) - JOURNAL_WINDOW), JOURNAL_WINDOW, 'sessions');
}

export async function sessionsPage(store: ExecutionStore): Promise<Html> {
  const now = await store.now();
  const runs = sessionsOf(await recentSessionEntries(store)).slice(0, 200);
  return html`<h1>Sessions</h1>
<table id="sessions">
<thead><tr><th>Session</th><th>Actor</th><th>Client</th><th>Protocol</th><th>Started</th><th>Ended</th><th>Executions</th></tr></thead>
<tbody>${runs.map(
    (r) =>
      html`<tr><td class="mono"><a href="/sessions/${encodeURIComponent(r.session)}">${r.session}</a></td><td>${r.actor ?? '–'}</td><td>${r.client}</td><td>${r.protocol}</td><td>${when(r.started, now)}</td><td>${when(r.ended, now)}</td><td><a href="/executions?session=${encodeURIComponent(r.session)}">list</a></td></tr>`,
  )}</tbody>
</table>
${runs.length === 0 ? html`<p>No agent runs journaled yet.</p>` : ''}`;
}

export async function sessionPage(store: ExecutionStore, session: string): Promise<Html | undefined> {
  const now = await store.now();
  const entries = (await recentSessionEntries(store)).filter((e) => e.requestRef === session);
  // The newest page of them; the Executions page pages through the rest and counts them.
  const executions = await store.list({ session, limit: 100 });
  if (entries.length === 0 && executions.length === 0) return undefined;
  const run = sessionsOf(entries)[0];
  return html`<h1>Session <span class="mono">${session}</span></h1>
${run ? html`<dl class="record"><dt>Actor</dt><dd>${run.actor ?? '–'}</dd><dt>Client</dt><dd>${run.client}</dd><dt>Protocol</dt><dd>${run.protocol}</dd><dt>Started</dt><dd>${when(run.started, now)}</dd><dt>Ended</dt><dd>${when(run.ended, now)}</dd></dl>` : ''}
<h2>Executions of this run</h2>
<p><a href="/executions?session=${encodeURIComponent(session)}">All of them, counted by state</a></p>
<table><thead><tr><th>Ref</th><th>State</th><th>Tool</th><th>Created</th></tr></thead>
<tbody>${executions.map(
    (r) =>
      html`<tr><td class="mono"><a href="/executions/${r.id}">${r.id}</a></td><td>${badge(r.state)}</td><td>${r.tool}</td><td>${when(r.createdAt, now)}</td></tr>`,
  )}</tbody></table>
<h2>Events</h2>
<table><thead><tr><th>Seq</th><th>When</th><th>Event</th><th>Detail</th></tr></thead>
<tbody>${entries.map(
    (e) =>
      html`<tr><td>${e.seq}</td><td>${when(e.at, now)}</td><td>${e.kind}</td><td class="mono">${JSON.stringify(e.detail)}</td></tr>`,
  )}</tbody></table>`;
}
