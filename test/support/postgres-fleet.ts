import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** Where a fleet member lives and which database it shares with the others. */
export interface FleetMember {
  /** The directory of the whole fleet: the member's data directory and the shared key are in it. */
  work: string;
  /** The member's name: its data directory is `<work>/<name>` (made here). */
  name: string;
  /** The PostgreSQL database every member of the fleet uses. */
  url: string;
  /** More of the store's settings than its kind and URL: `pool`, `statement_timeout`. */
  store?: Record<string, unknown>;
}

/**
 * The config of one gateway of a PostgreSQL fleet: a data directory of its
 * own, and the fleet's one `<work>/fingerprint.key` — one installation, so
 * every gateway must fingerprint alike, or a call retried through another
 * gateway would not be known there. `particular` is the rest of the config,
 * as the caller would write it (upstreams, tools, sweep_interval, listen, …).
 */
export function fleetMemberConfig<Particular extends Record<string, unknown>>(
  member: FleetMember,
  particular: Particular,
) {
  const dataDir = join(member.work, member.name);
  mkdirSync(dataDir, { recursive: true });
  return {
    data_dir: dataDir,
    fingerprint_key_file: join(member.work, 'fingerprint.key'),
    store: { kind: 'postgres', url: member.url, ...member.store },
    ...particular,
  };
}
