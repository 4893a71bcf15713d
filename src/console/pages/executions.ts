import { html } from 'hono/html';
import { EXECUTION_STATES, type ExecutionState, isExecutionState } from '../../executions/states.js';
import type { ExecutionFilter, ExecutionRecord, ExecutionStore } from '../../store/types.js';
import { badge, copyable, type Html, when } from '../layout.js';
import { callCounts } from './life.js';

/**
 * The Executions page: counts per state, a search, what needs a human on top,
 * then every execution newest first, a page at a time. Everything is read in
 * bounded queries (store.countByState, store.list with a limit and a page
 * key), so the page costs the same over ten executions or a million.
 */

export interface ExecutionFilters {
  state?: ExecutionState;
  tool?: string;
  actor?: string;
  session?: string;
  /** Minutes back from now. */
  sinceMinutes?: number;
  /** Search text (ExecutionFilter.text). */
  q?: string;
  /** The page below this ref (the last ref of the page before). */
  before?: string;
}

/** Rows per page. */
export const PAGE_SIZE = 50;
/** At most this many unknown and awaiting executions are pinned on top. */
const ATTENTION_LIMIT = 50;
/** States that wait for a human: pinned on top of the first page. */
const NEEDS_A_HUMAN: readonly ExecutionState[] = ['unknown', 'awaiting_approval'];

/** Reads the filters from a query string; anything malformed is dropped, not trusted. */
export function executionFilters(query: Record<string, string | undefined>): ExecutionFilters {
  const text = (v: string | undefined) => (v && v.trim() !== '' && v.length <= 200 ? v.trim() : undefined);
  const minutes = Number(query.since);
  const q = text(query.q);
  const before = text(query.before);
  return {
    ...(isExecutionState(query.state) ? { state: query.state } : {}),
    ...(text(query.tool) ? { tool: text(query.tool) } : {}),
    ...(text(query.actor) ? { actor: text(query.actor) } : {}),
    ...(text(query.session) ? { session: text(query.session) } : {}),
    ...(Number.isInteger(minutes) && minutes > 0 ? { sinceMinutes: minutes } : {}),
    ...(q ? { q } : {}),
    ...(before ? { before } : {}),
  };
}

function queryOf(filters: ExecutionFilters): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) {
    if (value !== undefined) query.set(key === 'sinceMinutes' ? 'since' : key, String(value));
  }
  return `/executions?${query}`;
}

export async function executionsPage(store: ExecutionStore, filters: ExecutionFilters): Promise<Html> {
  const now = await store.now();
  const narrowed: ExecutionFilter = {
    ...(filters.tool ? { tool: filters.tool } : {}),
    ...(filters.actor ? { actor: filters.actor } : {}),
    ...(filters.session ? { session: filters.session } : {}),
    ...(filters.sinceMinutes ? { since: now - filters.sinceMinutes * 60_000 } : {}),
    ...(filters.q ? { text: filters.q } : {}),
  };
  const pinned = !filters.state && !filters.before;
  const [counts, attention, listed] = await Promise.all([
    store.countByState(narrowed),
    pinned ? store.list({ ...narrowed, state: NEEDS_A_HUMAN, limit: ATTENTION_LIMIT }) : [],
    store.list({
      ...narrowed,
      ...(filters.state ? { state: filters.state } : {}),
      ...(filters.before ? { before: filters.before } : {}),
      limit: PAGE_SIZE + 1,
    }),
  ]);
  const page = listed.slice(0, PAGE_SIZE);
  const older = listed.length > PAGE_SIZE ? page.at(-1)?.id : undefined;
  // Unknown outcomes before approvals (an effect may have happened), each newest first.
  attention.sort((a, b) => NEEDS_A_HUMAN.indexOf(a.state) - NEEDS_A_HUMAN.indexOf(b.state));
  const onTop = new Set(attention.map((r) => r.id));
  const rest = page.filter((r) => !onTop.has(r.id));
  // Attempts and replays, from each shown execution's journal (indexed by execution): at most a page and the pinned ones.
  const shown = [...attention, ...rest];
  const tallies = new Map(
    await Promise.all(shown.map(async (r) => [r.id, callCounts(await store.journalFor(r.id))] as const)),
  );
  const total = EXECUTION_STATES.reduce((sum, s) => sum + counts[s], 0);
  const row = (r: ExecutionRecord) => {
    const tally = tallies.get(r.id) ?? { attempts: 0, replays: 0 };
    return html`<tr data-ref="${r.id}" data-state="${r.state}">
  <td>${copyable(r.id, `/executions/${r.id}`)}</td>
  <td>${badge(r.state)}</td>
  <td>${r.tool}</td><td>${r.actor}</td>
  <td class="num"><span class="${tally.attempts > 1 ? 'some' : ''}" data-cell="attempts">${tally.attempts}</span> · <span class="${tally.replays > 0 ? 'some' : ''}" data-cell="replays">${tally.replays}</span></td>
  <td>${when(r.createdAt, now)}</td>
  <td><div class="args" title="${r.argumentsPreview}">${r.argumentsPreview}</div></td>
</tr>`;
  };
  return html`<h1>Executions</h1>
<div class="counts">
  ${EXECUTION_STATES.map((state) => {
    const n = counts[state];
    return html`<a href="${queryOf({ ...filters, state, before: undefined })}" class="${n > 0 && NEEDS_A_HUMAN.includes(state) ? 'attention' : ''}" data-state="${state}"><strong>${n}</strong>${state.replace('_', ' ')}</a>`;
  })}
</div>
<form class="search" method="get" action="/executions" role="search">
  <input type="search" name="q" id="search" value="${filters.q ?? ''}" maxlength="200" aria-label="Search executions" placeholder="ref (or its start), request id, task id, tool, actor, argument text">
  <button type="submit">Search</button>
  ${filters.q ? html`<a href="${queryOf({ ...filters, q: undefined, before: undefined })}">clear</a>` : ''}
</form>
<form class="filters" method="get" action="/executions">
  ${filters.q ? html`<input type="hidden" name="q" value="${filters.q}">` : ''}
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
<p class="muted" id="matched">${total} execution${total === 1 ? '' : 's'} match${total === 1 ? 'es' : ''}${filters.q ? html` “${filters.q}”` : ''}${attention.length ? ` · ${attention.length} waiting for a human, on top` : ''}.</p>
<table id="executions">
<thead><tr><th>Ref</th><th>State</th><th>Tool</th><th>Actor</th><th title="Attempts: sends to the target. Replays: calls answered from this execution (repeats that attached, receipts replayed).">Attempts · replays</th><th>Created (UTC)</th><th>Arguments (redacted)</th></tr></thead>
${attention.length ? html`<tbody class="attention">${attention.map(row)}</tbody>` : ''}
<tbody>${rest.map(row)}</tbody>
</table>
${shown.length === 0 ? html`<p>No executions match.</p>` : ''}
<nav class="pager" aria-label="Pages">
  ${filters.before ? html`<a href="${queryOf({ ...filters, before: undefined })}" id="newest">← Newest</a>` : ''}
  <span>${page.length ? `${page.length} shown, newest first` : ''}</span>
  ${older ? html`<a href="${queryOf({ ...filters, before: older })}" id="older" rel="next">Older →</a>` : ''}
</nav>`;
}
