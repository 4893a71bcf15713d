import { html, raw } from 'hono/html';
import type { ExecutionState } from '../../executions/states.js';
import type { ActivityEntry } from '../../journal/events.js';
import type { ExecutionStore } from '../../store/types.js';
import type { Html } from '../layout.js';

/**
 * Calls per minute over the last hour, by how they were answered, drawn as
 * stacked bars (an SVG made here: no chart library, no script). Read from
 * the activity journal, so it covers every gateway on the store: a call that
 * made a new execution (`received`) is counted as that execution stands now
 * (in flight if it had to wait for an approval); a call that attached to one
 * (`attached`) by the state it found — an `authorized` one it then ran.
 */

export const CHART_ANSWERS = [
  'executed',
  'replayed',
  'in_flight',
  'unknown',
  'not_executed',
  'denied',
] as const;
export type ChartAnswer = (typeof CHART_ANSWERS)[number];

const COLOURS: Record<ChartAnswer, string> = {
  executed: '#2f9e44',
  replayed: '#4dabf7',
  in_flight: '#fab005',
  unknown: '#e03131',
  not_executed: '#868e96',
  denied: '#495057',
};

const MINUTES = 60;
/** The journal's tail read for the hour; a busier hour is drawn from its newest rows. */
const JOURNAL_WINDOW = 100_000;

function answerOfState(state: ExecutionState | undefined, attached: boolean): ChartAnswer {
  switch (state) {
    case 'authorized':
      return attached ? 'executed' : 'in_flight';
    case 'completed':
    case 'failed':
      return attached ? 'replayed' : 'executed';
    case 'unknown':
      return 'unknown';
    case 'denied':
      return 'denied';
    case undefined:
      return 'not_executed';
    default:
      return 'in_flight';
  }
}

export interface ActivityBuckets {
  /** Start of the first minute (ms). */
  from: number;
  /** Per minute, oldest first: count per answer. */
  minutes: Record<ChartAnswer, number>[];
}

/** Counts the last hour's calls per minute and answer, from journal entries and the executions they made. */
export function bucketActivity(
  entries: readonly ActivityEntry[],
  stateOf: (executionId: string) => ExecutionState | undefined,
  /** Executions that waited for an approval: their first call was answered "awaiting approval". */
  approvalAsked: (executionId: string) => boolean,
  now: number,
): ActivityBuckets {
  const from = Math.floor(now / 60_000) * 60_000 - (MINUTES - 1) * 60_000;
  const minutes = Array.from({ length: MINUTES }, () =>
    Object.fromEntries(CHART_ANSWERS.map((a) => [a, 0])),
  ) as Record<ChartAnswer, number>[];
  for (const e of entries) {
    if (e.at < from || (e.kind !== 'received' && e.kind !== 'attached')) continue;
    const state =
      e.kind === 'attached'
        ? (e.detail.state as ExecutionState | undefined)
        : e.executionId && approvalAsked(e.executionId)
          ? 'awaiting_approval'
          : e.executionId
            ? stateOf(e.executionId)
            : undefined;
    const bucket = minutes[Math.min(MINUTES - 1, Math.floor((e.at - from) / 60_000))];
    if (bucket) bucket[answerOfState(state, e.kind === 'attached')]++;
  }
  return { from, minutes };
}

export async function loadActivity(store: ExecutionStore): Promise<ActivityBuckets> {
  const now = await store.now();
  const head = await store.journalHead('activity');
  const entries = await store.readJournal(Math.max(0, (head?.seq ?? 0) - JOURNAL_WINDOW), JOURNAL_WINDOW);
  const states = new Map(
    (await store.list({ since: now - (MINUTES + 1) * 60_000, limit: JOURNAL_WINDOW })).map((r) => [
      r.id,
      r.state,
    ]),
  );
  const asked = new Set(
    (await store.listApprovals({ limit: JOURNAL_WINDOW }))
      .filter((a) => a.requestedAt >= now - (MINUTES + 1) * 60_000)
      .map((a) => a.executionId),
  );
  return bucketActivity(
    entries,
    (id) => states.get(id),
    (id) => asked.has(id),
    now,
  );
}

/** The chart: stacked bars, one per minute, an axis with the peak and a legend with the hour's totals. */
export function activityChart({ from, minutes }: ActivityBuckets): Html {
  const width = 900;
  const height = 240;
  const left = 40;
  const bottom = 24;
  const plotHeight = height - bottom - 10;
  const barWidth = (width - left) / MINUTES;
  const peak = Math.max(1, ...minutes.map((m) => CHART_ANSWERS.reduce((sum, a) => sum + m[a], 0)));
  const scale = plotHeight / peak;
  const bars: string[] = [];
  minutes.forEach((m, i) => {
    let y = height - bottom;
    for (const answer of CHART_ANSWERS) {
      if (m[answer] === 0) continue;
      const h = m[answer] * scale;
      y -= h;
      const at = new Date(from + i * 60_000).toISOString().slice(11, 16);
      bars.push(
        `<rect x="${(left + i * barWidth + 1).toFixed(1)}" y="${y.toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLOURS[answer]}" data-answer="${answer}"><title>${at} ${answer}: ${m[answer]}</title></rect>`,
      );
    }
  });
  const ticks = [0, 15, 30, 45, 59].map((i) => {
    const x = left + i * barWidth + barWidth / 2;
    return `<text x="${x.toFixed(1)}" y="${height - 6}" text-anchor="${i === 59 ? 'end' : 'middle'}">${new Date(from + i * 60_000).toISOString().slice(11, 16)}</text>`;
  });
  const totals = CHART_ANSWERS.map((a) => [a, minutes.reduce((sum, m) => sum + m[a], 0)] as const);
  // Every value in the SVG is a number, an ISO time or a fixed name: nothing from a caller.
  return html`<svg id="activity-chart" viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="Calls per minute by answer, last hour">
  <line x1="${left}" y1="${height - bottom}" x2="${width}" y2="${height - bottom}" stroke="#ccd"/>
  <text x="${left - 6}" y="16" text-anchor="end">${peak}</text>
  <text x="${left - 6}" y="${height - bottom}" text-anchor="end">0</text>
  ${raw(bars.join(''))}${raw(ticks.join(''))}
</svg>
<ul class="counts" id="activity-legend">${totals.map(
    ([answer, n]) =>
      html`<li style="list-style:none"><span style="display:inline-block;width:10px;height:10px;background:${COLOURS[answer]}"></span> ${answer.replace('_', ' ')}: <strong data-answer="${answer}">${n}</strong></li>`,
  )}</ul>`;
}

export async function activityPage(store: ExecutionStore): Promise<Html> {
  return html`<h1>Activity</h1><p>Calls per minute over the last hour, by answer (from the activity journal, all gateways on this store).</p>
<div class="panel">${activityChart(await loadActivity(store))}</div>`;
}
