import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { ActivityEntry, ActivityEventInput } from './events.js';

/**
 * The tag that opens the hashed body of a row of the one-row-per-transaction
 * format (docs/adr/0052): no row of the format before it (one event, its body
 * a JSON array) can start with it, so the two bodies never hash alike.
 */
export const ROW_FORMAT_TAG = 'idem-journal-row/v2';

/** prev_hash of the first entry of chain 0: the one chain of a single-writer store, and of PostgreSQL stores before v4. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * prev_hash of the first entry of chain `chain` of `stream`. A PostgreSQL store
 * gives each writer chains of its own (docs/postgres.md, "One chain per
 * writer"); the chain's id and stream are bound into every hash of it through
 * this genesis, so a row cannot be moved to another chain or stream unseen.
 * Chain 0 keeps the all-zero genesis, so journals written before chains
 * existed verify unchanged. PostgreSQL computes the same text in SQL when it
 * registers a chain (store/postgres/migrations.ts, v4): chain.test.ts pins it.
 *
 *   genesis = SHA-256("idem-journal-chain/v1\n" ‖ stream ‖ "\n" ‖ chain), hex
 */
export function chainGenesis(stream: string, chain: number): string {
  if (chain === 0) return GENESIS_HASH;
  return hash('sha256', `idem-journal-chain/v1\n${stream}\n${chain}`, 'hex');
}

/**
 * The fields of an entry its hash covers besides `detail` (and `prevHash`,
 * which is chained in). `kind` is any string: a stored row is hashed as it is,
 * whether or not this version knows its kind.
 */
export interface HashedEnvelope {
  seq: number;
  at: number;
  kind: string;
  executionId: string | null;
  actor: string | null;
  tool: string | null;
  requestRef: string | null;
}

/**
 * The one definition of what an entry's hash covers — every store, the
 * offline verifier (and its workers) and the test tools that forge chains go
 * through here, so they cannot disagree:
 *
 *   hash = SHA-256(prev_hash ‖ "\n" ‖ envelope ‖ "\n" ‖ detail), hex
 *
 * The envelope has a fixed shape, so it is a JSON array in a fixed order (JSON
 * of strings, integers and null is already deterministic); only `detail`,
 * whose keys vary, goes through RFC 8785. `detailText` is that canonical text
 * as stored — the verifier hashes the bytes on disk, not what a parser made of
 * them. Changing any of this orphans every stored journal: chain.test.ts pins
 * it with known-answer vectors.
 */
export function journalEntryHash(prevHash: string, envelope: HashedEnvelope, detailText: string): string {
  return chainHash(prevHash, `${envelopeText(envelope)}\n${detailText}`);
}

/** The exact bytes an entry's hash covers after `prev_hash`: everything but the hash itself. */
export function entryBody(entry: Omit<ActivityEntry, 'hash' | 'prevHash'>): string {
  return `${envelopeText(entry)}\n${canonicalize(entry.detail) as string}`;
}

/** hash = SHA-256(prev_hash ‖ "\n" ‖ body), hex, where body is `entryBody(...)`. */
export function chainHash(prevHash: string, body: string): string {
  // One-shot hash(): a third of createHash()'s cost on rows this small, and verify hashes millions of them.
  return hash('sha256', `${prevHash}\n${body}`, 'hex');
}

function envelopeText(e: HashedEnvelope): string {
  return JSON.stringify([e.seq, e.at, e.kind, e.executionId, e.actor, e.tool, e.requestRef]);
}

/**
 * `prev_hash ‖ "\n" ‖ envelope ‖ "\n" ‖ detail` — exactly what chainHash
 * hashes — computed by SQLite from a journal table's columns, for the
 * verifier's fast path (verify-range.ts): one text per row instead of ten
 * values and a JSON.stringify, which is most of what verifying costs. It is
 * NULL for a row it cannot spell byte-for-byte as envelopeText does, and the
 * verifier then takes the exact path. Why it is the same bytes:
 * - json_array writes no spaces, quotes a text as JSON.stringify does (it
 *   escapes `"`, `\`, and U+0000–U+001F as \b \t \n \f \r, else \u00xx in
 *   lower case, and nothing else), NULL as `null`, and an integer — guarded
 *   below 2^53, where JavaScript's number is exact — as its digits;
 * - prev_hash and detail are joined with `||`, which keeps an embedded NUL
 *   (printf's `%s` would stop at it);
 * - better-sqlite3 decodes the whole text as UTF-8, as it decodes each
 *   column, and the joints are ASCII, so invalid bytes decode the same.
 * chain.test.ts checks it against journalEntryHash on hostile strings in the
 * bundled SQLite, so an upgrade that spells JSON otherwise fails there.
 */
export const SQL_ENTRY_BODY = `CASE WHEN ${sqlSpellable()}
  THEN prev_hash || char(10) || json_array(seq, at, kind, execution_id, actor, tool, request_ref) || char(10) || detail
  END`;

/**
 * The row's columns hold only what SQL_ENTRY_BODY spells exactly as
 * envelopeText does: integers within 2^53 (BETWEEN, not abs(): the same
 * bound, a third of the guard's cost), texts or NULL — never a blob, which
 * json_array would read as JSONB — and a text prev_hash and detail.
 */
function sqlSpellable(): string {
  const safe = 'BETWEEN -9007199254740991 AND 9007199254740991';
  return `typeof(seq) = 'integer' AND typeof(at) = 'integer' AND seq ${safe} AND at ${safe}
    AND typeof(kind) IN ('text', 'null') AND typeof(execution_id) IN ('text', 'null')
    AND typeof(actor) IN ('text', 'null') AND typeof(tool) IN ('text', 'null')
    AND typeof(request_ref) IN ('text', 'null')
    AND typeof(prev_hash) = 'text' AND typeof(detail) = 'text'`;
}

/** The length of a hash and of a prev_hash in SQL_HASHED_ROW's text: SHA-256 in hex. */
export const HASH_CHARS = 64;

/**
 * One text per row for the verifier's fast path: the stored hash, then the
 * SQL_ENTRY_BODY it must be the hash of — `hash ‖ prev_hash ‖ "\n" ‖
 * envelope ‖ "\n" ‖ detail`. One value per row is read far faster than
 * several (better-sqlite3 builds no row array).
 *
 * Its guard is SQL_ENTRY_BODY's split in two, because SQLite's part of it
 * was a third of the verifier's time (a typeof() call costs as much as
 * loading the column): SQLite keeps only what the text cannot show, and the
 * reader (verify-range.ts) checks the rest on the text. Together they admit
 * exactly the rows sqlSpellable admits:
 * - seq and at are within 2^53 — which also excludes a text, a blob and
 *   NULL; a real within it passes here, but json_array always spells a real
 *   with a decimal point (`5.0`, `1.0e+20`), and the reader takes seq and at
 *   only as plain digits;
 * - the five texts of the envelope are texts or NULL: for values, every
 *   number sorts below '' and every blob at or above x'';
 * - detail is a text, by the same comparisons;
 * - hash and prev_hash are texts of 64 bytes (octet_length reads no
 *   content), so neither runs on past 64 characters. The reader wants hex in
 *   both of its first two 64-character spans — the stored hash equal to a
 *   digest, prev_hash equal to the hash before it — and the "\n" at 128: a
 *   64-byte text with a non-ASCII character is shorter in characters, moves
 *   that "\n" (the envelope holds none unescaped) into a span, and fails.
 * A row it rejects is NULL, and the verifier takes the exact path.
 */
export const SQL_HASHED_ROW = `CASE WHEN ${sqlHashedRowGuard()}
  THEN concat(hash, prev_hash, char(10), json_array(seq, at, kind, execution_id, actor, tool, request_ref), char(10), detail)
  END`;

function sqlHashedRowGuard(): string {
  const safe = 'BETWEEN -9007199254740991 AND 9007199254740991';
  const textOrNull = (c: string) => `ifnull(${c}, '') >= '' AND ifnull(${c}, '') < x''`;
  const hex = (c: string) => `octet_length(${c}) = ${HASH_CHARS} AND ${c} < x''`;
  return [
    `seq ${safe}`,
    `at ${safe}`,
    ...['kind', 'execution_id', 'actor', 'tool', 'request_ref'].map(textOrNull),
    `detail >= '' AND detail < x''`,
    hex('hash'),
    hex('prev_hash'),
  ].join('\n    AND ');
}

/**
 * SQL_HASHED_ROW for a journal table that has the `events` column (SQLite
 * migration 9), which holds rows of both formats: a row of the earlier format
 * (`events` NULL) as SQL_HASHED_ROW spells it; a row of the
 * one-row-per-transaction format as `hash ‖ prev_hash ‖ "\n" ‖
 * "idem-journal-row/v2" ‖ "\n[" seq "," at "," n "]\n" ‖ events` — the stored
 * hash, then rowBody's text. Nothing is re-spelled but three integers: the
 * events' text is hashed as stored. Its guard keeps the same split as
 * SQL_HASHED_ROW's: seq, at and n within 2^53 here (a real passes, and the
 * reader, verify-range.ts, refuses its decimal point), detail a text, hash and
 * prev_hash 64-byte texts.
 */
export const SQL_HASHED_ROWS = `CASE WHEN events IS NULL THEN ${SQL_HASHED_ROW}
  WHEN ${sqlRowGuard()}
  THEN concat(hash, prev_hash, char(10), '${ROW_FORMAT_TAG}', char(10), '[', seq, ',', at, ',', events, ']', char(10), detail)
  END`;

function sqlRowGuard(): string {
  const safe = 'BETWEEN -9007199254740991 AND 9007199254740991';
  const hex = (c: string) => `octet_length(${c}) = ${HASH_CHARS} AND ${c} < x''`;
  return [
    `seq ${safe}`,
    `at ${safe}`,
    'events BETWEEN 1 AND 9007199254740991',
    // Its own envelope empty (verify.ts emptyEnvelope): the hash does not cover those columns.
    "kind = '' AND coalesce(execution_id, actor, tool, request_ref) IS NULL",
    `detail >= '' AND detail < x''`,
    hex('hash'),
    hex('prev_hash'),
  ].join('\n    AND ');
}

/** The hash of a row whose SQL_ENTRY_BODY is `body`: chainHash's, with the prefix already in the text. */
export function sqlEntryBodyHash(body: string): string {
  return hash('sha256', body, 'hex');
}

/**
 * The envelope's text after `[seq,at,` — what PostgreSQL's journal_append (one
 * event a row: before its migration 8, and from a gateway not yet upgraded) is
 * given, so that the JSON encoding of the strings stays this one
 * (JSON.stringify), and the database only adds the two integers it decides:
 * `'[' ‖ seq ‖ ',' ‖ at ‖ ',' ‖ tail` is envelopeText.
 */
export function envelopeTail(event: ActivityEventInput): string {
  return JSON.stringify([
    event.kind,
    event.executionId ?? null,
    event.actor ?? null,
    event.tool ?? null,
    event.requestRef ?? null,
  ]).slice(1);
}

/** An event as a row of the one-row-per-transaction format holds it: the envelope's five fields, then its detail. */
export type RowEvent = [
  kind: string,
  executionId: string | null,
  actor: string | null,
  tool: string | null,
  requestRef: string | null,
  detail: unknown,
];

/**
 * What the hash of a row of the one-row-per-transaction format covers (docs/adr/0052):
 *
 *   hash = SHA-256(prev_hash ‖ "\n" ‖ "idem-journal-row/v2" ‖ "\n" ‖ "[" seq "," at "," n "]" ‖ "\n" ‖ events), hex
 *
 * `seq` is the seq of the row's last event (its events are seq−n+1 … seq), `n`
 * how many it holds, and `events` the RFC 8785 text of the array of its events,
 * each `[kind, executionId, actor, tool, requestRef, detail]` — the text the
 * store keeps (in `detail`), so the verifier hashes the bytes as stored. Rows of
 * the earlier format (one event each) still hash as journalEntryHash says.
 * chain.test.ts pins it with known-answer vectors.
 */
export function journalRowHash(
  prevHash: string,
  seq: number,
  at: number,
  events: number,
  eventsText: string,
): string {
  return chainHash(prevHash, rowBody(seq, at, events, eventsText));
}

/** The exact bytes a row's hash covers after `prev_hash`: journalRowHash's body. */
export function rowBody(seq: number, at: number, events: number, eventsText: string): string {
  return `${ROW_FORMAT_TAG}\n[${seq},${at},${events}]\n${eventsText}`;
}

/** The canonical (RFC 8785) text of a transaction's events: what a row keeps and its hash covers. */
export function rowEventsText(events: readonly ActivityEventInput[]): string {
  return canonicalize(
    events.map(
      (e): RowEvent => [
        e.kind,
        e.executionId ?? null,
        e.actor ?? null,
        e.tool ?? null,
        e.requestRef ?? null,
        e.detail ?? {},
      ],
    ),
  ) as string;
}

/** A journal row of the one-row-per-transaction format: its place in the chain and its events' text. */
export interface JournalRow {
  /** The seq of its last event. */
  seq: number;
  at: number;
  /** How many events it holds (at least one). */
  events: number;
  eventsText: string;
  prevHash: string;
  hash: string;
}

/**
 * The row that `events` (one transaction's, in order) become on a chain whose
 * head is (`headSeq`, `prevHash`). Used by every store that writes this format;
 * rowEntries gives the events a reader sees of it.
 */
export function buildRow(
  events: readonly ActivityEventInput[],
  headSeq: number,
  at: number,
  prevHash: string,
): JournalRow {
  const eventsText = rowEventsText(events);
  const seq = headSeq + events.length;
  const hash = journalRowHash(prevHash, seq, at, events.length, eventsText);
  return { seq, at, events: events.length, eventsText, prevHash, hash };
}

/**
 * The entries a reader sees of a stored row of the one-row-per-transaction
 * format: one per event, seq−n+1 … seq, each with the row's place in the chain.
 */
export function rowEntries(row: JournalRow, chain?: number): ActivityEntry[] {
  const events = JSON.parse(row.eventsText) as RowEvent[];
  const first = row.seq - row.events + 1;
  return events.map(
    (e, i): ActivityEntry => ({
      seq: first + i,
      at: row.at,
      kind: e[0] as ActivityEntry['kind'],
      executionId: e[1],
      actor: e[2],
      tool: e[3],
      requestRef: e[4],
      detail: e[5] as ActivityEntry['detail'],
      prevHash: row.prevHash,
      hash: row.hash,
      rowEvents: row.events,
      ...(chain ? { chain } : {}),
    }),
  );
}

/**
 * Builds the next entry of a chain whose head is (`seq`, `prevHash`), and the
 * canonical text of its detail — what stores keep, so that an offline
 * verifier hashes the stored bytes as they are. Used by every store.
 */
export function buildEntry(
  event: ActivityEventInput,
  seq: number,
  at: number,
  prevHash: string,
): { entry: ActivityEntry; detailText: string } {
  const detailText = eventDetailText(event);
  // Built once and hashed in place: copying a partial entry into the final one
  // (`{ ...partial, prevHash, hash }`) cost more than the SHA-256 of the row.
  const entry: ActivityEntry = {
    seq,
    at,
    kind: event.kind,
    executionId: event.executionId ?? null,
    actor: event.actor ?? null,
    tool: event.tool ?? null,
    requestRef: event.requestRef ?? null,
    detail: event.detail ?? {},
    prevHash,
    hash: '',
  };
  entry.hash = journalEntryHash(prevHash, entry, detailText);
  return { entry, detailText };
}

/** The canonical (RFC 8785) text of an event's detail: what stores keep and the hash covers. */
export function eventDetailText(event: ActivityEventInput): string {
  return canonicalize(event.detail ?? {}) as string;
}

/** The next entry of a chain whose head is (`seq`, `prevHash`). */
export function nextEntry(
  event: ActivityEventInput,
  seq: number,
  at: number,
  prevHash: string,
): ActivityEntry {
  return buildEntry(event, seq, at, prevHash).entry;
}
