/** The console's one stylesheet (/static/console.css): no inline style but SVG fills, no framework. */
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
td.mono, .mono, pre { font-family: ui-monospace, SFMono-Regular, Menlo, "DejaVu Sans Mono", monospace; font-size:12px; }
td.mono { word-break:break-all; }
.ref { display:inline-flex; align-items:center; gap:6px; white-space:nowrap; }
.ref .mono { word-break:normal; }
button.copy { font-size:11px; line-height:1; padding:2px 6px; background:#fff; color:var(--muted); border-color:var(--line); }
button.copy:hover { color:var(--accent); border-color:var(--accent); }
button.copy[data-copied] { color:#146c2e; border-color:#8ce99a; }
button.quiet { background:transparent; color:#cfd6e4; border-color:#4a5468; font-size:12px; padding:2px 8px; }
.when { font-variant-numeric: tabular-nums; white-space:nowrap; }
.ago, .muted, small.muted { color:var(--muted); font-size:12px; }
td .ago { display:block; }
td.num { text-align:right; font-variant-numeric: tabular-nums; }
td.num .some { font-weight:700; color:var(--fg); }
td.num { color:var(--muted); white-space:nowrap; }
td .when { font-size:13px; }
div.args { max-width:230px; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; font-family: ui-monospace, SFMono-Regular, Menlo, "DejaVu Sans Mono", monospace; font-size:12px; color:#344054; }
tbody.attention tr:last-child td { border-bottom:2px solid #f0b4b4; }
tbody.attention td:first-child { box-shadow: inset 3px 0 0 #e03131; }
div.argbox { max-width:380px; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size:12px; word-break:break-word; background:#f8f9fb; border:1px solid var(--line); border-radius:4px; padding:4px 8px; margin-bottom:2px; }
#approvals td { vertical-align:middle; }
pre.json { margin:0; white-space:pre-wrap; word-break:break-word; background:#f8f9fb; border:1px solid var(--line); border-radius:4px; padding:8px 10px; max-height:360px; overflow:auto; }
dl.kv { display:grid; grid-template-columns:max-content 1fr; gap:0 10px; margin:0; }
dl.kv dt { color:var(--muted); font-size:12px; } dl.kv dd { margin:0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size:12px; word-break:break-word; }
.search { display:flex; gap:8px; margin:0 0 10px; }
.search input { flex:1; max-width:640px; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.pager { display:flex; gap:16px; align-items:center; margin:10px 0; color:var(--muted); }
.live-mark { display:flex; align-items:center; gap:8px; color:#cfd6e4; font-size:12px; }
.live-mark .dot { width:8px; height:8px; border-radius:50%; background:#51cf66; box-shadow:0 0 0 3px rgba(81,207,102,.25); }
.live-mark[data-state=paused] .dot { background:#fab005; box-shadow:none; }
.live-mark[data-state=stale] .dot { background:#ff922b; }
.live-mark[data-state=ended] .dot { background:#fa5252; box-shadow:none; }
.life { background:#fff; border:1px solid var(--line); padding:12px 12px 4px; margin:12px 0; }
.life svg { display:block; width:100%; height:auto; }
.life .summary { margin:6px 0 4px; color:var(--muted); font-size:12px; }
.confirm { border:2px solid #fab005; }
.confirm.denied { border-color:#c92a2a; }
.decide-actions { display:flex; gap:10px; align-items:center; margin-top:10px; }
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
svg text.in { fill:#fff; font-weight:600; }
svg text.dark { fill:#1d2330; font-weight:600; }
`;
