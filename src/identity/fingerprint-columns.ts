/**
 * How the SQL stores keep a fingerprint (and a request digest, which is
 * spelled the same way) in a column. One rule is shared: `fp_` + base64url of
 * 32 bytes is stored as those 32 bytes — 11 to 14 fewer in the row and again
 * in the index. Each dialect keeps any other spelling its own way, so that no
 * fingerprint is ever altered and the two forms never compare equal:
 * - SQLite (a column of type ANY): as its text; a BLOB never equals a TEXT.
 * - PostgreSQL (bytea): as 0xFF + its UTF-8 — a byte UTF-8 never contains —
 *   and never 32 bytes long (one more 0xFF if it would be).
 * These are on-disk formats: changing either needs a migration.
 */

export interface FingerprintColumn<Stored> {
  encode(fingerprint: string): Stored;
  decode(stored: Stored): string;
}

const COMPACT_FINGERPRINT = /^fp_[A-Za-z0-9_-]{43}$/;
const COMPACT_BYTES = 32;

/** The 32 bytes a fingerprint spells, if it is the canonical `fp_` spelling of 32 bytes. */
function compactBytes(fingerprint: string): Buffer | undefined {
  if (!COMPACT_FINGERPRINT.test(fingerprint)) return undefined;
  const bytes = Buffer.from(fingerprint.slice(3), 'base64url');
  // Base64 has spare bits in its last character: only the canonical spelling decodes back to itself.
  return compactText(bytes) === fingerprint ? bytes : undefined;
}

function compactText(bytes: Buffer): string {
  return `fp_${bytes.toString('base64url')}`;
}

/** A fingerprint as SQLite keeps it: the 32 bytes (BLOB) or the text. */
export type SqliteFingerprint = Buffer | string;

export const sqliteFingerprint: FingerprintColumn<SqliteFingerprint> = {
  encode: (fingerprint) => compactBytes(fingerprint) ?? fingerprint,
  decode: (stored) => (typeof stored === 'string' ? stored : compactText(stored)),
};

const TAGGED = Buffer.from([0xff]);
const TAGGED_TWICE = Buffer.from([0xff, 0xff]);

export const postgresFingerprint: FingerprintColumn<Buffer> = {
  encode(fingerprint) {
    const compact = compactBytes(fingerprint);
    if (compact) return compact;
    const text = Buffer.from(fingerprint, 'utf8');
    return Buffer.concat([text.length + 1 === COMPACT_BYTES ? TAGGED_TWICE : TAGGED, text]);
  },
  decode(stored) {
    if (stored.length === COMPACT_BYTES) return compactText(stored);
    let start = 0;
    while (stored[start] === 0xff) start++;
    return stored.subarray(start).toString('utf8');
  },
};

/** A request digest is optional: null stays null. */
export function encodeOptional<Stored>(
  column: FingerprintColumn<Stored>,
  value: string | null | undefined,
): Stored | null {
  return value == null ? null : column.encode(value);
}

export function decodeOptional<Stored>(
  column: FingerprintColumn<Stored>,
  stored: Stored | null,
): string | null {
  return stored === null ? null : column.decode(stored);
}
