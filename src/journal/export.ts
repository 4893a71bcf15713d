import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import canonicalize from 'canonicalize';
import { JOURNAL_STREAMS, type JournalStream } from './events.js';
import type { StoredExecutionRow } from './executions-check.js';
import type { SignedHead } from './signing.js';
import type { StoredJournalRow } from './verify-report.js';

/**
 * JSONL export: what it holds first (its streams, and whether the executions
 * table follows), the signed heads (if any), then one journal entry per line.
 * Field names follow the stored columns.
 */
export type ExportLine =
  | { type: 'export'; streams: JournalStream[]; executions: boolean }
  | ({ type: 'entry'; stream: 'activity' | 'sessions' } & Omit<StoredJournalRow, 'detailText'> & {
        detail: unknown;
      })
  | ({ type: 'signed_head' } & SignedHead)
  /** Marks that the executions table follows (so that an export without it is not read as an empty table). */
  | { type: 'executions' }
  | ({ type: 'execution' } & StoredExecutionRow);

export function entryLine(stream: 'activity' | 'sessions', row: StoredJournalRow): string {
  const { detailText, ...rest } = row;
  return JSON.stringify({ type: 'entry', stream, ...rest, detail: JSON.parse(detailText) });
}

/** The first line: which journals the export holds, so that verify judges it on those only. */
export function exportHeaderLine(streams: readonly JournalStream[], executions: boolean): string {
  return JSON.stringify({ type: 'export', streams, executions });
}

/**
 * What an export holds: as its first line says, or — an export written before it said — the
 * journals it has heads or entries of, and the executions table if its marker is there (an
 * export of every stream). Read from the file as it is: a line removed or changed shows as
 * something verify says it did not check, never as something it checked and passed.
 */
export async function readExportCoverage(
  path: string,
): Promise<{ streams: JournalStream[]; executions: boolean }> {
  const seen = new Set<JournalStream>();
  let executions = false;
  for await (const { number, line } of lines(path)) {
    if (number === 1 && line.type === 'export')
      return {
        streams: JOURNAL_STREAMS.filter((s) => line.streams.includes(s)),
        executions: line.executions,
      };
    if (line.type === 'signed_head' || line.type === 'entry') seen.add(line.stream);
    if (line.type === 'executions') executions = true;
  }
  // Nothing in it at all: judged as before exports said what they hold, on every stream.
  const all = executions || seen.size === 0;
  return { streams: all ? [...JOURNAL_STREAMS] : JOURNAL_STREAMS.filter((s) => seen.has(s)), executions };
}

export function signedHeadLine(head: SignedHead): string {
  return JSON.stringify({ type: 'signed_head', ...head });
}

export const EXECUTIONS_MARKER_LINE = JSON.stringify({ type: 'executions' });

/** One execution row: what verify cross-checks against the journal (the outcome by its digest only). */
export function executionLine(row: StoredExecutionRow): string {
  return JSON.stringify({ type: 'execution', ...row });
}

/** The export's execution rows, if it has the executions table (an export of every stream does). */
export async function readExportExecutions(
  path: string,
): Promise<AsyncIterable<StoredExecutionRow> | undefined> {
  let marked = false;
  for await (const { line } of lines(path)) {
    if (line.type === 'executions') {
      marked = true;
      break;
    }
  }
  if (!marked) return undefined;
  async function* rows(): AsyncIterable<StoredExecutionRow> {
    for await (const { line } of lines(path)) {
      if (line.type !== 'execution') continue;
      const { type: _type, ...row } = line;
      yield row;
    }
  }
  return rows();
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
    if (line.type === 'export') continue;
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
