import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  decodeOptional,
  encodeOptional,
  type FingerprintColumn,
  postgresFingerprint,
  sqliteFingerprint,
} from './fingerprint-columns.js';

const canonical = `fp_${randomBytes(32).toString('base64url')}`;
const lastIsA = `fp_${Buffer.alloc(32).toString('base64url')}`;
/** The same 32 bytes as lastIsA, spelled with the last character's spare bits set. */
const nonCanonical = `${lastIsA.slice(0, -1)}B`;
const others = [nonCanonical, 'legacy:abc', 'x'.repeat(31), 'x'.repeat(32), 'é'.repeat(16), ''];

function roundTrips<Stored extends Buffer | string>(column: FingerprintColumn<Stored>): void {
  const all = [canonical, lastIsA, ...others];
  const stored = all.map((fp) => column.encode(fp));
  expect(stored.map((s) => column.decode(s))).toEqual(all);
  // A BLOB never equals a TEXT in SQLite: the type is part of the key.
  const keys = stored.map((s) => (typeof s === 'string' ? `text:${s}` : `bytes:${s.toString('hex')}`));
  expect(new Set(keys).size).toBe(all.length);
}

describe('fingerprint columns', () => {
  it('both dialects store the canonical fp_ spelling as its 32 bytes', () => {
    for (const fp of [canonical, lastIsA]) {
      const expected = Buffer.from(fp.slice(3), 'base64url');
      expect(sqliteFingerprint.encode(fp)).toEqual(expected);
      expect(postgresFingerprint.encode(fp)).toEqual(expected);
    }
  });

  it('SQLite keeps any other spelling as its text', () => {
    for (const fp of others) expect(sqliteFingerprint.encode(fp)).toBe(fp);
  });

  it('PostgreSQL keeps any other spelling tagged with 0xFF and never 32 bytes long', () => {
    for (const fp of others) {
      const stored = postgresFingerprint.encode(fp);
      expect(stored[0]).toBe(0xff);
      expect(stored.length).not.toBe(32);
    }
    expect(postgresFingerprint.encode('x'.repeat(31))).toEqual(
      Buffer.from(`\xff\xff${'x'.repeat(31)}`, 'latin1'),
    );
  });

  it('every spelling reads back unchanged, and no two spellings share a stored form', () => {
    roundTrips(sqliteFingerprint);
    roundTrips(postgresFingerprint);
  });

  it('an absent request digest stays null', () => {
    expect(encodeOptional(sqliteFingerprint, undefined)).toBeNull();
    expect(encodeOptional(postgresFingerprint, null)).toBeNull();
    expect(decodeOptional(postgresFingerprint, null)).toBeNull();
    expect(decodeOptional(sqliteFingerprint, sqliteFingerprint.encode(canonical))).toBe(canonical);
  });
});
