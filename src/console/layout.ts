import { html } from 'hono/html';
import { clockTime, isoTime, relative } from './format.js';

/** The frame of every console page: navigation, who is logged in, the logout form, the live mark. */

export type Html = ReturnType<typeof html>;

export interface PageFrame {
  title: string;
  /** The logged-in operator and the session's CSRF token; absent on the login page. */
  operator?: { name: string; csrf: string };
  /** Which navigation entry is current. */
  section?: 'executions' | 'approvals' | 'sessions' | 'journal' | 'activity';
  /** Refresh the main part of the page every few seconds (pages without forms being filled). */
  live?: boolean;
  /** Live without moving rows: rows on screen stay put, new ones are counted (see live-script.ts). */
  stableRows?: boolean;
  /** When the page was read (the console's clock): the live mark says it. */
  renderedAt?: number;
}

const SECTIONS = [
  ['executions', 'Executions'],
  ['approvals', 'Approvals'],
  ['sessions', 'Sessions'],
  ['journal', 'Journal'],
  ['activity', 'Activity'],
] as const;

export function page(frame: PageFrame, body: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${frame.title} · Idem console</title>
<link rel="stylesheet" href="/static/console.css">
<script src="/static/live.js" defer></script>
<script src="/static/copy.js" defer></script>
</head>
<body>
<header>
  <a class="brand" href="/executions">Idem</a>
  ${
    frame.operator
      ? html`<nav>${SECTIONS.map(
          ([key, label]) =>
            html`<a href="/${key}" ${frame.section === key ? html`class="current" aria-current="page"` : ''}>${label}</a>`,
        )}</nav>
  ${frame.live ? liveMark(frame.renderedAt ?? Date.now()) : ''}
  <form method="post" action="/logout" class="who">
    <span>${frame.operator.name}</span>
    <input type="hidden" name="csrf" value="${frame.operator.csrf}">
    <button type="submit">Log out</button>
  </form>`
      : ''
  }
</header>
<main ${frame.live ? html`data-live="5000"` : ''} ${frame.stableRows ? html`data-stable-rows` : ''} data-rendered-at="${frame.renderedAt ?? ''}">
${body}
</main>
</body>
</html>`;
}

/**
 * Whether the page is live, when it was last brought up to date, and a pause
 * (live-script.ts keeps all three current). Outside <main>, so a refresh
 * never replaces it and the pause button never counts as a form being filled.
 */
function liveMark(at: number): Html {
  return html`<div class="live-mark" id="live-mark" data-state="live" role="status">
    <span class="dot" aria-hidden="true"></span>
    <span id="live-state">Live</span>
    <span class="updated">updated <time id="live-updated" datetime="${new Date(at).toISOString()}">${clockTime(at)} UTC</time></span>
    <button type="button" id="live-pause" class="quiet" aria-pressed="false">Pause</button>
  </div>`;
}

/** A hidden CSRF field for a form of this session. */
export function csrfField(csrf: string): Html {
  return html`<input type="hidden" name="csrf" value="${csrf}">`;
}

/** A moment: UTC to the millisecond, and how long ago by `now` (the store's clock). */
export function when(ms: number | null | undefined, now: number): Html {
  if (ms === null || ms === undefined) return html`<span class="muted">–</span>`;
  return html`<time class="when" datetime="${new Date(ms).toISOString()}">${isoTime(ms)}</time> <span class="ago">${relative(ms, now)}</span>`;
}

/** An id in monospace on one line, with a button that copies it (copy-script.ts). */
export function copyable(id: string, href?: string): Html {
  return html`<span class="ref">${href ? html`<a class="mono" href="${href}">${id}</a>` : html`<span class="mono">${id}</span>`}<button type="button" class="copy" data-copy="${id}" title="Copy ${id}" aria-label="Copy ${id}">copy</button></span>`;
}

/** A state as a coloured badge (colour by class in console.css). */
export function badge(state: string): Html {
  return html`<span class="badge state-${state}">${state.replace('_', ' ')}</span>`;
}
