import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import canonicalize from 'canonicalize';
import type { SignedHead } from './signing.js';
import type { StoredJournalRow } from './verify.js';

/**
 * JSONL export: the signed heads first (if any), then one journal entry per
 * line. Field names follow the stored columns.
 */
export type ExportLine =
  | ({ type: 'entry'; stream: 'activity' | 'sessions' } & Omit<StoredJournalRow, 'detailText'> & {
        detail: unknown;
      })
  | ({ type: 'signed_head' } & SignedHead);

export function entryLine(stream: 'activity' | 'sessions', row: StoredJournalRow): string {
  const { detailText, ...rest } = row;
  return JSON.stringify({ type: 'entry', stream, ...rest, detail: JSON.parse(detailText) });
}

export function signedHeadLine(head: SignedHead): string {
  return JSON.stringify({ type: 'signed_head', ...head });
}

/**
 * Reads an export back: the signed heads (written first), and the entries of
 * one stream as stored rows with detail in canonical text — exactly what the
 * chain hashed. A damaged line is reported by number: an export is evidence,
 * and damage is a finding, not noise.
 */
export async function readExport(
  path: string,
  stream: 'activity' | 'sessions' = 'activity',
): Promise<{ heads: SignedHead[]; rows: AsyncIterable<StoredJournalRow> }> {
  const heads: SignedHead[] = [];
  for await (const { line } of lines(path)) {
    if (line.type !== 'signed_head') break;
    const { type: _type, ...head } = line;
    heads.push(head);
  }
  async function* rows(): AsyncIterable<StoredJournalRow> {
    for await (const { line } of lines(path)) {
      if (line.type !== 'entry' || line.stream !== stream) continue;
      const { type: _type, stream: _stream, detail, ...rest } = line;
      yield { ...rest, detailText: canonicalize(detail) ?? 'null' };
    }
  }
  return { heads, rows: rows() };
}

async function* lines(path: string): AsyncIterable<{ number: number; line: ExportLine }> {
  const input = createInterface({
    input: createReadStream(path, 'utf8'),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let number = 0;
  try {
    for await (const text of input) {
      number++;
      if (text.trim() === '') continue;
      try {
        yield { number, line: JSON.parse(text) as ExportLine };
      } catch {
        throw new Error(`${path}:${number}: not a JSON line`);
      }
    }
  } finally {
    input.close();
  }
}
