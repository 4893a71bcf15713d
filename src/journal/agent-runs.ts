import type { ActivityEntry } from './events.js';

/** One agent run as the sessions journal tells it (`idem sessions`, the console). */
export interface SessionRow {
  session: string;
  actor: string | null;
  client: string;
  protocol: string;
  started: number | null;
  ended: number | null;
}

/** Groups the sessions journal into agent runs. */
export function sessionsOf(entries: ActivityEntry[]): SessionRow[] {
  const byId = new Map<string, SessionRow>();
  for (const e of entries) {
    const id = e.requestRef ?? '(no session)';
    const row = byId.get(id) ?? {
      session: id,
      actor: e.actor,
      client: '-',
      protocol: '-',
      started: null,
      ended: null,
    };
    if (e.kind === 'session_start') {
      const client = e.detail.client as { name?: string; version?: string } | null | undefined;
      row.started = e.at;
      row.actor = e.actor;
      row.client = client?.name ? `${client.name} ${client.version ?? ''}`.trim() : '-';
      row.protocol = typeof e.detail.protocol_version === 'string' ? e.detail.protocol_version : '-';
    } else if (e.kind === 'session_end') row.ended = e.at;
    byId.set(id, row);
  }
  return [...byId.values()].sort((a, b) => (b.started ?? 0) - (a.started ?? 0));
}
