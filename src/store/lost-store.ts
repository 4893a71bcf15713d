import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { StoreRefusedError } from '../errors.js';
import { JOURNAL_STREAMS, type JournalStream } from '../journal/events.js';
import type { JournalReader } from '../journal/reader.js';
import { readSignedHeads, SIGNED_HEAD_FILE } from '../journal/signing.js';

/**
 * A lost store (DESIGN §9): the data directory's signed journal heads say
 * executions were recorded, yet the store is empty or missing. Starting on it
 * would forget every execution, so each retry of one of them would run the
 * action again. Only a first start, or the operator's explicit
 * `idem store new --accept-lost-executions`, begins a new store.
 */

/** The furthest signed seq of each stream, from the data directory's journal-head.json. */
export type JournalEvidence = Partial<Record<JournalStream, number>>;

/** What journal-head.json in `dataDir` says was journaled; undefined when it says nothing (a first start). */
export function journalEvidence(dataDir: string): JournalEvidence | undefined {
  const evidence: JournalEvidence = {};
  for (const head of readSignedHeads(join(dataDir, SIGNED_HEAD_FILE))) {
    if (head.seq > 0 && head.seq > (evidence[head.stream] ?? 0)) evidence[head.stream] = head.seq;
  }
  return Object.keys(evidence).length > 0 ? evidence : undefined;
}

/** Where the store is, as the refusal names it: a SQLite file, or a PostgreSQL URL without its password. */
export type StorePlace = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

/**
 * Refuses a SQLite file that is missing or empty while the data directory
 * has evidence — before opening it, because opening creates one.
 */
export function refuseMissingFile(dataDir: string, path: string): void {
  const evidence = journalEvidence(dataDir);
  if (!evidence) return;
  if (!existsSync(path)) throw lostStoreError(dataDir, { kind: 'sqlite', path }, evidence, 'does not exist');
  if (statSync(path).size === 0)
    throw lostStoreError(dataDir, { kind: 'sqlite', path }, evidence, 'is empty');
}

/**
 * Refuses an opened store whose journal is empty for a stream the data
 * directory's signed heads cover. A journal that is shorter than its last
 * head but not empty (a backup restored) is not refused here: signing refuses
 * it, and `idem audit verify` names it `truncated`.
 */
export async function refuseEmptyJournal(
  dataDir: string,
  place: StorePlace,
  store: JournalReader,
): Promise<void> {
  const evidence = journalEvidence(dataDir);
  if (!evidence) return;
  for (const stream of JOURNAL_STREAMS) {
    if (evidence[stream] === undefined) continue;
    if ((await store.journalHead(stream)) === undefined) {
      throw lostStoreError(dataDir, place, evidence, `has an empty ${stream} journal`);
    }
  }
}

function lostStoreError(
  dataDir: string,
  place: StorePlace,
  evidence: JournalEvidence,
  what: string,
): StoreRefusedError {
  const where = place.kind === 'sqlite' ? place.path : redactUrl(place.url);
  const name = place.kind === 'sqlite' ? `the SQLite store at ${where}` : `the PostgreSQL store at ${where}`;
  const heads = JOURNAL_STREAMS.filter((s) => evidence[s] !== undefined)
    .map((s) => `${s} seq ${evidence[s]}`)
    .join(', ');
  const restore =
    place.kind === 'sqlite'
      ? `put its backup back at ${where} (with its -wal file, if the backup has one), then check it with \`idem audit verify --db ${where}\``
      : `restore the database from its backup, then check it with \`idem audit verify --db <url>\``;
  const message = [
    `refused ${name} (lost): the store ${what}, yet ${join(dataDir, SIGNED_HEAD_FILE)} holds signed journal heads up to ${heads}.`,
    'Executions were recorded here; on an empty store their retries would run the actions again. Nothing was run.',
    `To recover: stop every gateway using this data directory; ${restore}; then start again.`,
    'Only if the executions are truly lost (their retries may run again):',
    `\`idem store new --accept-lost-executions ${place.kind === 'sqlite' ? `--db ${where}` : '--config <idem.yaml>'}\``,
    'starts a new store, keeps the old heads aside and journals that an operator started anew (docs/operators.md, "A lost store").',
  ].join(' ');
  return new StoreRefusedError('lost', where, message);
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
