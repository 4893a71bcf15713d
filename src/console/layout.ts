import { html } from 'hono/html';

/** The frame of every console page: navigation, who is logged in, the logout form. */

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
  <form method="post" action="/logout" class="who">
    <span>${frame.operator.name}</span>
    <input type="hidden" name="csrf" value="${frame.operator.csrf}">
    <button type="submit">Log out</button>
  </form>`
      : ''
  }
</header>
<main ${frame.live ? html`data-live="5000"` : ''} ${frame.stableRows ? html`data-stable-rows` : ''}>
${body}
</main>
</body>
</html>`;
}

/** A hidden CSRF field for a form of this session. */
export function csrfField(csrf: string): Html {
  return html`<input type="hidden" name="csrf" value="${csrf}">`;
}

export function time(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '–' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** A state as a coloured badge (colour by class in console.css). */
export function badge(state: string): Html {
  return html`<span class="badge state-${state}">${state}</span>`;
}

export const STYLESHEET = `
:root { --fg:#1d2330; --muted:#667085; --line:#e3e7ee; --bg:#f7f8fa; --accent:#3b5bdb; }
* { box-sizing: border-box; }
body { margin:0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; align-items:center; gap:24px; padding:10px 24px; background:#1d2330; color:#fff; }
header a { color:#cfd6e4; text-decoration:none; }
header .brand { font-weight:700; color:#fff; font-size:16px; }
nav { display:flex; gap:16px; flex:1; }
nav a.current { color:#fff; border-bottom:2px solid #8fa8ff; }
.who { display:flex; gap:8px; align-items:center; color:#cfd6e4; }
main { padding:20px 24px; max-width:1280px; }
h1 { font-size:20px; margin:0 0 12px; }
h2 { font-size:16px; margin:20px 0 8px; }
table { border-collapse:collapse; width:100%; background:#fff; border:1px solid var(--line); }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:#eef1f6; font-weight:600; font-size:12px; text-transform:uppercase; color:var(--muted); }
td.mono, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size:12px; word-break:break-all; }
a { color:var(--accent); }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px; background:#e9ecf2; }
.state-unknown, .state-review { background:#ffe3e3; color:#a61e1e; font-weight:600; }
.state-awaiting_approval { background:#fff3bf; color:#7a5b00; }
.state-dispatched, .state-accepted, .state-authorized { background:#e7f0ff; color:#1d4ed8; }
.state-completed { background:#e6f7ec; color:#146c2e; }
.state-failed, .state-denied { background:#f1f3f5; color:#495057; }
.counts { display:flex; gap:10px; flex-wrap:wrap; margin-bottom:14px; }
.counts a { background:#fff; border:1px solid var(--line); border-radius:6px; padding:6px 12px; text-decoration:none; color:var(--fg); }
.counts a strong { font-size:18px; display:block; }
.counts a.attention { border-color:#f08c8c; }
form.filters { display:flex; gap:8px; flex-wrap:wrap; margin-bottom:12px; align-items:end; }
form.filters label { display:flex; flex-direction:column; font-size:12px; color:var(--muted); }
input, select, textarea, button { font:inherit; padding:4px 8px; border:1px solid #c5ccd8; border-radius:4px; }
button { background:var(--accent); color:#fff; border-color:var(--accent); cursor:pointer; }
button.deny { background:#c92a2a; border-color:#c92a2a; }
button:disabled { opacity:.45; cursor:not-allowed; }
dl.record { display:grid; grid-template-columns: 140px 1fr; gap:4px 12px; background:#fff; border:1px solid var(--line); padding:12px; }
dl.record dt { color:var(--muted); }
dl.record dd { margin:0; }
.panel { background:#fff; border:1px solid var(--line); padding:12px; margin:12px 0; }
.notice { padding:8px 12px; border-radius:4px; margin:8px 0; background:#e6f7ec; }
.notice.error { background:#ffe3e3; }
.ok { color:#146c2e; font-weight:600; } .bad { color:#a61e1e; font-weight:600; }
.news { height:1.8em; line-height:1.6em; margin:4px 0; padding:0 8px; border-radius:4px; white-space:nowrap; overflow:hidden; text-overflow:ellipsis; }
.news:not(:empty) { background:#fff3bf; }
.live-notice { position:fixed; top:0; left:0; right:0; padding:12px 24px; font-weight:600; z-index:10; }
.live-notice.ended { background:#a61e1e; color:#fff; }
.live-notice.ended a { color:#fff; }
.live-notice.stale { background:#fff3bf; color:#7a5b00; }
tr[data-state=gone], tr[data-state=approved], tr[data-state=denied], tr[data-state=expired] { opacity:.6; }
.login { max-width:360px; margin:60px auto; background:#fff; border:1px solid var(--line); padding:24px; }
.login label { display:block; margin:10px 0 4px; }
.login input { width:100%; }
svg text { font: 11px system-ui, sans-serif; fill: #556; }
`;
