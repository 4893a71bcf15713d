import { html, raw } from 'hono/html';
import type { ActivityEntry } from '../../journal/events.js';
import type { ExecutionStore } from '../../store/types.js';
import { isoTime } from '../format.js';
import type { Html } from '../layout.js';

/**
 * What happened, hour by hour over the last day: the activity journal's
 * entries counted by kind in the hour they were written, drawn as stacked
 * bars (an SVG made here: no chart library, no script). Events, not the
 * executions' states now: an hour that had an outcome go unknown shows it,
 * even after an operator resolved it (which shows in its own hour). Read from
 * the journal, so it covers every gateway on the store.
 */

export const SERIES = [
  'received',
  'attached',
  'dispatched',
  'completed',
  'failed',
  'unknown',
  'awaiting_approval',
  'authorized',
  'denied',
  'operator_resolution',
] as const;
export type Series = (typeof SERIES)[number];

const LABELS: Record<Series, string> = {
  received: 'calls received',
  attached: 'repeats attached',
  dispatched: 'dispatched',
  completed: 'outcome completed',
  failed: 'outcome failed',
  unknown: 'became unknown',
  awaiting_approval: 'asked for approval',
  authorized: 'approved',
  denied: 'denied',
  operator_resolution: 'resolved by an operator',
};

const COLOURS: Record<Series, string> = {
  received: '#ced4da',
  attached: '#74c0fc',
  dispatched: '#3b5bdb',
  completed: '#2f9e44',
  failed: '#868e96',
  unknown: '#e03131',
  awaiting_approval: '#f59f00',
  authorized: '#fcc419',
  denied: '#495057',
  operator_resolution: '#7048e8',
};

const HOURS = 24;
const HOUR = 3_600_000;
/** The journal's tail read for the day; a busier day is drawn from its newest rows (the page says so). */
export const JOURNAL_WINDOW = 100_000;

/** The series an entry counts in; undefined for kinds not drawn (accepted, delivered, tasks…: one per call or execution, or bookkeeping). */
export function seriesOf(entry: Pick<ActivityEntry, 'kind' | 'detail'>): Series | undefined {
  switch (entry.kind) {
    case 'received':
    case 'dispatched':
    case 'awaiting_approval':
    case 'authorized':
    case 'denied':
    case 'operator_resolution':
      return entry.kind;
    case 'attached':
    case 'receipt_hit':
      return 'attached';
    case 'upstream_task_resumed':
      return 'dispatched';
    case 'lease_expired':
      return 'unknown';
    case 'outcome': {
      const state = entry.detail.state;
      return state === 'completed' || state === 'failed' || state === 'unknown' ? state : undefined;
    }
    default:
      return undefined;
  }
}

export interface ActivityBuckets {
  /** Start of the first hour (ms). */
  from: number;
  /** Per hour, oldest first: count per series. */
  hours: Record<Series, number>[];
  /** The window read did not reach back to `from`: older hours are undercounted. */
  partial: boolean;
}

export function bucketActivity(
  entries: readonly ActivityEntry[],
  now: number,
  partial = false,
): ActivityBuckets {
  const from = Math.floor(now / HOUR) * HOUR - (HOURS - 1) * HOUR;
  const hours = Array.from({ length: HOURS }, () => Object.fromEntries(SERIES.map((s) => [s, 0]))) as Record<
    Series,
    number
  >[];
  for (const e of entries) {
    if (e.at < from) continue;
    const series = seriesOf(e);
    const bucket = hours[Math.min(HOURS - 1, Math.floor((e.at - from) / HOUR))];
    if (series && bucket) bucket[series]++;
  }
  const first = entries[0];
  return { from, hours, partial: partial && first !== undefined && first.at > from };
}

export async function loadActivity(store: ExecutionStore): Promise<ActivityBuckets> {
  const [now, head] = await Promise.all([store.now(), store.journalHead('activity')]);
  const after = Math.max(0, (head?.seq ?? 0) - JOURNAL_WINDOW);
  return bucketActivity(await store.readJournal(after, JOURNAL_WINDOW), now, after > 0);
}

/** The chart: stacked bars, one per hour, an axis with the peak and a legend with the day's totals. */
export function activityChart({ from, hours, partial }: ActivityBuckets): Html {
  const width = 960;
  const height = 260;
  const left = 44;
  const bottom = 24;
  const plotHeight = height - bottom - 12;
  const barWidth = (width - left) / HOURS;
  const peak = Math.max(1, ...hours.map((h) => SERIES.reduce((sum, s) => sum + h[s], 0)));
  const scale = plotHeight / peak;
  const bars: string[] = [];
  hours.forEach((h, i) => {
    let y = height - bottom;
    const at = new Date(from + i * HOUR).toISOString().slice(11, 16);
    for (const series of SERIES) {
      if (h[series] === 0) continue;
      const size = h[series] * scale;
      y -= size;
      bars.push(
        `<rect x="${(left + i * barWidth + 2).toFixed(1)}" y="${y.toFixed(1)}" width="${(barWidth - 4).toFixed(1)}" height="${size.toFixed(1)}" fill="${COLOURS[series]}" data-series="${series}" data-hour="${at}"><title>${at}–${String((Number(at.slice(0, 2)) + 1) % 24).padStart(2, '0')}:00 UTC ${LABELS[series]}: ${h[series]}</title></rect>`,
      );
    }
  });
  const ticks = [0, 6, 12, 18, 23].map((i) => {
    const x = left + i * barWidth + barWidth / 2;
    return `<text x="${x.toFixed(1)}" y="${height - 6}" text-anchor="middle">${new Date(from + i * HOUR).toISOString().slice(11, 16)}</text>`;
  });
  const totals = SERIES.map((s) => [s, hours.reduce((sum, h) => sum + h[s], 0)] as const);
  // Every value in the SVG is a number, an ISO time or a fixed name: nothing from a caller.
  return html`<svg id="activity-chart" viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="Journal entries per hour by kind, last 24 hours (UTC)">
  <line x1="${left}" y1="${height - bottom}" x2="${width}" y2="${height - bottom}" stroke="#ccd"/>
  <text x="${left - 6}" y="16" text-anchor="end">${peak}</text>
  <text x="${left - 6}" y="${height - bottom}" text-anchor="end">0</text>
  ${raw(bars.join(''))}${raw(ticks.join(''))}
</svg>
<ul class="counts" id="activity-legend">${totals.map(
    ([series, n]) =>
      html`<li style="list-style:none"><span style="display:inline-block;width:10px;height:10px;background:${COLOURS[series]}"></span> ${LABELS[series]}: <strong data-series="${series}">${n}</strong></li>`,
  )}</ul>
${partial ? html`<p class="muted" id="activity-partial">Drawn from the newest ${JOURNAL_WINDOW.toLocaleString('en')} journal entries, which begin after ${isoTime(from)}: the oldest hours are undercounted.</p>` : ''}`;
}

export async function activityPage(store: ExecutionStore): Promise<Html> {
  return html`<h1>Activity</h1><p>What the activity journal recorded in each hour of the last day (UTC), by kind: events as they happened, not the executions' states now. All gateways on this store.</p>
<div class="panel">${activityChart(await loadActivity(store))}</div>`;
}
