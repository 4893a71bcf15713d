import { html } from 'hono/html';
import type { ActivityEntry } from '../../journal/events.js';
import { stateAfter } from '../../journal/rebuild.js';
import { type ExecutionState, FINISHED } from '../../journal/states.js';
import { clockTime, duration, isoTime } from '../format.js';
import type { Html } from '../layout.js';

/**
 * An execution's life as a picture (inline SVG, drawn here: no script, no
 * library): its states as bars on one time axis, each with how long it
 * lasted, and what happened to it on the same axis below — the repeats that
 * attached, the approval decision, an operator's resolution, the delivery.
 * Read from its journal alone (stateAfter: the states the journal says).
 */

export interface Span {
  state: ExecutionState;
  from: number;
  to: number;
  /** Still in this state: the span runs to now. */
  open: boolean;
}

export type MarkKind = 'repeat' | 'decision' | 'resolution' | 'delivered' | 'task';

export interface Mark {
  kind: MarkKind;
  at: number;
  label: string;
  /** Who or what carried it (actor, request), for the tooltip. */
  detail: string;
}

export interface Life {
  spans: Span[];
  marks: Mark[];
}

/** The journal's attempts (sends to the target) and replays (calls answered from this execution). */
export function callCounts(timeline: readonly Pick<ActivityEntry, 'kind'>[]): {
  attempts: number;
  replays: number;
} {
  let attempts = 0;
  let replays = 0;
  for (const e of timeline) {
    if (e.kind === 'dispatched' || e.kind === 'upstream_task_resumed') attempts++;
    else if (e.kind === 'attached' || e.kind === 'receipt_hit') replays++;
  }
  return { attempts, replays };
}

function markOf(e: ActivityEntry): Mark | undefined {
  const by = typeof e.detail.by === 'string' ? e.detail.by : undefined;
  const who = [e.actor, e.requestRef].filter(Boolean).join(' · ');
  switch (e.kind) {
    case 'attached':
      return {
        kind: 'repeat',
        at: e.at,
        label: 'repeat',
        detail: `a repeat attached (found it ${String(e.detail.state ?? '?')}) ${who}`,
      };
    case 'receipt_hit':
      return { kind: 'repeat', at: e.at, label: 'replay', detail: `answered from its receipt ${who}` };
    case 'authorized':
    case 'denied':
      return by
        ? {
            kind: 'decision',
            at: e.at,
            label: `${e.kind === 'authorized' ? 'approved' : 'denied'} by ${by}`,
            detail: `${String(e.detail.via ?? '')} ${String(e.detail.reason ?? '')}`,
          }
        : undefined;
    case 'operator_resolution':
      return {
        kind: 'resolution',
        at: e.at,
        label: `resolved as ${String(e.detail.as)} by ${by ?? '?'}`,
        detail: String(e.detail.note ?? ''),
      };
    case 'delivered':
      return { kind: 'delivered', at: e.at, label: 'delivered', detail: who };
    case 'task_created':
      return { kind: 'task', at: e.at, label: 'task', detail: `${String(e.detail.taskId ?? '')} ${who}` };
    default:
      return undefined;
  }
}

export function lifeOf(timeline: readonly ActivityEntry[], now: number): Life {
  const spans: Span[] = [];
  const marks: Mark[] = [];
  let state: ExecutionState | undefined;
  for (const e of timeline) {
    const next = stateAfter(e, state);
    if (next && next !== state) {
      const last = spans.at(-1);
      if (last) last.to = e.at;
      spans.push({ state: next, from: e.at, to: e.at, open: false });
      state = next;
    }
    const mark = markOf(e);
    if (mark) marks.push(mark);
  }
  const last = spans.at(-1);
  if (last) {
    const finished = FINISHED.includes(last.state);
    last.open = !finished;
    last.to = finished ? Math.max(last.from, timeline.at(-1)?.at ?? last.from) : Math.max(last.from, now);
  }
  return { spans, marks };
}

const COLOURS: Record<ExecutionState, string> = {
  accepted: '#91a7ff',
  awaiting_approval: '#f59f00',
  authorized: '#748ffc',
  dispatched: '#3b5bdb',
  completed: '#2f9e44',
  failed: '#868e96',
  unknown: '#e03131',
  denied: '#495057',
};

const WIDTH = 1000;
const LEFT = 8;
const MIN_SPAN = 120;
const BAR_Y = 26;
const BAR_H = 30;
const MARK_Y = 86;

/** Widths: a floor each, so every state can be read, and the rest by the log of its duration. */
function layout(spans: readonly Span[]): { x: number; w: number }[] {
  const plot = WIDTH - 2 * LEFT;
  const floor = Math.min(MIN_SPAN, plot / Math.max(1, spans.length));
  const weights = spans.map((s) => Math.log10(2 + (s.to - s.from)));
  const total = weights.reduce((a, b) => a + b, 0) || 1;
  const spare = plot - floor * spans.length;
  let x = LEFT;
  return spans.map((_, i) => {
    const w = floor + (spare * (weights[i] as number)) / total;
    const at = { x, w };
    x += w;
    return at;
  });
}

/** The x of a moment: inside the span it falls in, by its share of that span's time. */
function xOf(at: number, spans: readonly Span[], boxes: readonly { x: number; w: number }[]): number {
  for (let i = spans.length - 1; i >= 0; i--) {
    const s = spans[i] as Span;
    const box = boxes[i] as { x: number; w: number };
    if (at >= s.from || i === 0) {
      const share = s.to > s.from ? Math.min(1, Math.max(0, (at - s.from) / (s.to - s.from))) : 0;
      return box.x + 6 + share * (box.w - 12);
    }
  }
  return LEFT;
}

/** Keeps a mark's label inside the picture: about 6 units a character at 11px. */
function anchorFor(x: number, label: string): 'start' | 'middle' | 'end' {
  const half = (label.length * 6.2) / 2;
  return x + half > WIDTH ? 'end' : x - half < 0 ? 'start' : 'middle';
}

function markShape(kind: MarkKind, x: number): Html {
  const y = MARK_Y;
  switch (kind) {
    case 'decision':
      return html`<path d="M${x} ${y - 7} L${x + 7} ${y} L${x} ${y + 7} L${x - 7} ${y} Z" fill="#f59f00"/>`;
    case 'resolution':
      return html`<path d="M${x - 6} ${y + 6} L${x} ${y - 7} L${x + 6} ${y + 6} Z" fill="#7048e8"/>`;
    case 'delivered':
      return html`<rect x="${x - 5}" y="${y - 5}" width="10" height="10" rx="2" fill="#2f9e44"/>`;
    case 'task':
      return html`<rect x="${x - 5}" y="${y - 5}" width="10" height="10" fill="none" stroke="#495057" stroke-width="2"/>`;
    default:
      return html`<circle cx="${x}" cy="${y}" r="6" fill="#fff" stroke="#1c7ed6" stroke-width="2.5"/>`;
  }
}

export function lifePicture(life: Life): Html {
  const { spans, marks } = life;
  if (spans.length === 0) return html`<p class="muted">No state change journaled.</p>`;
  const boxes = layout(spans);
  let lastTick = -Infinity;
  const rows = [-Infinity, -Infinity];
  const height = marks.length > 0 ? 138 : 72;
  return html`<svg id="life" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="The execution's states and events on one time axis">
  ${spans.map((s, i) => {
    const box = boxes[i] as { x: number; w: number };
    const span = s.to - s.from;
    const label = FINISHED.includes(s.state)
      ? s.state
      : `${s.state.replace('_', ' ')} · ${duration(span)}${s.open ? ' so far' : ''}`;
    const tick = box.x - lastTick >= 96 || i === 0;
    if (tick) lastTick = box.x;
    return html`<g data-state="${s.state}" data-ms="${span}" data-open="${s.open}">
    <title>${s.state} from ${isoTime(s.from)}${FINISHED.includes(s.state) ? '' : ` for ${duration(span)}${s.open ? ' (still)' : ''}`}</title>
    <rect x="${box.x + 1}" y="${BAR_Y}" width="${Math.max(2, box.w - 2)}" height="${BAR_H}" rx="4" fill="${COLOURS[s.state]}" ${s.open ? html`stroke="${COLOURS[s.state]}" stroke-dasharray="4 3" fill-opacity="0.55"` : ''}/>
    <text class="${s.open ? 'dark' : 'in'}" x="${box.x + 8}" y="${BAR_Y + 19}">${label}</text>
    ${tick ? html`<text x="${box.x + 2}" y="${BAR_Y - 8}">${clockTime(s.from)}</text>` : ''}
  </g>`;
  })}
  ${
    marks.length > 0
      ? html`<line x1="${LEFT}" y1="${MARK_Y}" x2="${WIDTH - LEFT}" y2="${MARK_Y}" stroke="#dee2e6"/>
  ${marks.map((m) => {
    const x = xOf(m.at, spans, boxes);
    const row = x - (rows[0] as number) >= 110 ? 0 : x - (rows[1] as number) >= 110 ? 1 : 0;
    rows[row] = x;
    return html`<g data-mark="${m.kind}"><title>${m.label} at ${isoTime(m.at)}${m.detail.trim() ? ` — ${m.detail.trim()}` : ''}</title>
    ${markShape(m.kind, x)}
    <text x="${x}" y="${MARK_Y + 24 + row * 14}" text-anchor="${anchorFor(x, m.label)}">${m.label}</text></g>`;
  })}`
      : ''
  }
</svg>`;
}

/** The picture in words: when it began, each change after how long, the repeats and attempts. */
export function lifeSummary(life: Life, counts: { attempts: number; replays: number }): string {
  const [first, ...rest] = life.spans;
  if (!first) return '';
  const steps = [`${first.state} ${isoTime(first.from)}`];
  let previous = first.from;
  for (const s of rest) {
    steps.push(`${s.state.replace('_', ' ')} after ${duration(s.from - previous)}`);
    previous = s.from;
  }
  const delivered = life.marks.find((m) => m.kind === 'delivered');
  if (delivered) steps.push(`delivered ${duration(delivered.at - previous)} later`);
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  return `${steps.join(' → ')} · ${plural(counts.attempts, 'attempt')} · ${plural(counts.replays, 'replay')}`;
}
