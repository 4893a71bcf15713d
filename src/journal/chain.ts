import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { ActivityEntry, ActivityEventInput } from './events.js';

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

/** The hash of a row whose SQL_ENTRY_BODY is `body`: chainHash's, with the prefix already in the text. */
export function sqlEntryBodyHash(body: string): string {
  return hash('sha256', body, 'hex');
}

/**
 * The envelope's text after `[seq,at,` — what a store that hashes in SQL
 * (PostgreSQL's journal_append) is given, so that the JSON encoding of the
 * strings stays this one (JSON.stringify), and the database only adds the two
 * integers it decides: `'[' ‖ seq ‖ ',' ‖ at ‖ ',' ‖ tail` is envelopeText.
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
