import type Database from 'better-sqlite3';
import { UNFINISHED_ROWS } from './sql.js';

export interface RowBytes {
  /**
   * `dbstat`: bytes in use on the pages (cells, cell pointers, page headers;
   * not free space), read from SQLite's dbstat table. `length`: an estimate
   * from the stored values' sizes plus fixed record and cell overheads, for
   * builds without dbstat.
   */
  method: 'dbstat' | 'length';
  rows: number;
  /** The executions table, per row, its outcome (result payload) excluded. */
  bytesPerRow: number;
  /** Its indexes (id, active fingerprint, state of an unfinished one), per row, on top of bytesPerRow. */
  indexBytesPerRow: number;
  /** dbstat only: table and indexes in whole pages, free space included, outcome excluded. */
  allocatedBytesPerRow: number | null;
  /** Total outcome text, in bytes, that was left out. */
  outcomeBytes: number;
}

/**
 * Bytes per execution row without its outcome (the result payload), the
 * figure the store's compactness target (300) is stated in; index bytes are
 * reported beside it. Prefers SQLite's `dbstat` table, which counts what is
 * really on the pages.
 */
export function bytesPerExecutionRow(
  db: Database.Database,
  options: { method?: 'dbstat' | 'length' } = {},
): RowBytes {
  const totals = db
    .prepare<[], { rows: number; outcomeBytes: number | null }>(
      'SELECT COUNT(*) AS rows, SUM(length(CAST(outcome AS BLOB))) AS outcomeBytes FROM executions',
    )
    .get()!;
  const rows = totals.rows;
  const outcomeBytes = totals.outcomeBytes ?? 0;
  const perRow = (bytes: number) => (rows === 0 ? 0 : bytes / rows);
  const method = options.method ?? (hasDbstat(db) ? 'dbstat' : 'length');

  if (method === 'dbstat') {
    const trees = db
      .prepare<[], { name: string; used: number; allocated: number }>(`
        SELECT name, SUM(pgsize - unused) AS used, SUM(pgsize) AS allocated FROM dbstat
        WHERE name IN (SELECT name FROM sqlite_schema WHERE tbl_name = 'executions' AND type IN ('table', 'index'))
        GROUP BY name`)
      .all();
    const used = (index: boolean) =>
      trees.filter((t) => (t.name !== 'executions') === index).reduce((total, t) => total + t.used, 0);
    const allocated = trees.reduce((total, t) => total + t.allocated, 0);
    return {
      method,
      rows,
      bytesPerRow: perRow(used(false) - outcomeBytes),
      indexBytesPerRow: perRow(used(true)),
      allocatedBytesPerRow: perRow(allocated - outcomeBytes),
      outcomeBytes,
    };
  }

  const estimate = db
    .prepare<[], { table: number | null; indexes: number | null }>(`
      SELECT
        SUM(${TABLE_ROW_OVERHEAD} + ${bytes('id')} + ${bytes('fingerprint')} + ${bytes('actor')} + ${bytes('tool')}
          + ${bytes('session')} + ${bytes('replay')} + ${bytes('state')} + ${bytes('claim_token')}
          + ${bytes('lease_owner')} + ${bytes('arguments_preview')} + ${bytes('note')} + ${bytes('request_digest')}
          + ${bytes('journal_seqs')}
          + ${INTEGER_COLUMNS.map(integerBytes).join(' + ')}) AS "table",
        SUM(${INDEX_ENTRY_OVERHEAD} + ${bytes('id')}
          + CASE WHEN ${UNFINISHED_ROWS} THEN ${INDEX_ENTRY_OVERHEAD} + ${bytes('state')} + ${integerBytes('updated_at')} ELSE 0 END
          + CASE active WHEN 1 THEN ${INDEX_ENTRY_OVERHEAD} + ${bytes('fingerprint')} ELSE 0 END) AS indexes
      FROM executions`)
    .get()!;
  return {
    method,
    rows,
    bytesPerRow: perRow(estimate.table ?? 0),
    indexBytesPerRow: perRow(estimate.indexes ?? 0),
    allocatedBytesPerRow: null,
    outcomeBytes,
  };
}

function hasDbstat(db: Database.Database): boolean {
  try {
    db.prepare('SELECT 1 FROM dbstat LIMIT 1').get();
    return true;
  } catch {
    return false;
  }
}

const INTEGER_COLUMNS = [
  'active',
  'created_at',
  'updated_at',
  'attach_until',
  'dispatched_at',
  'deadline_at',
  'lease_expires_at',
  'delivered_at',
];

/** Record header (a byte per column and its length), cell pointer, payload-size and rowid varints. */
const TABLE_ROW_OVERHEAD = 21 + 2 + 3 + 3;
/** Record header, cell pointer, payload-size varint, and the rowid every index entry carries. */
const INDEX_ENTRY_OVERHEAD = 3 + 2 + 1 + 4;

/** Bytes a text or blob value takes in a record (its UTF-8 length), 0 for NULL. */
function bytes(column: string): string {
  return `IFNULL(length(CAST(${column} AS BLOB)), 0)`;
}

/** SQLite's record format stores an integer in the fewest of 0, 1, 2, 3, 4, 6 or 8 bytes. */
function integerBytes(column: string): string {
  return `(CASE WHEN ${column} IS NULL OR ${column} IN (0, 1) THEN 0
    WHEN abs(${column}) < 128 THEN 1 WHEN abs(${column}) < 32768 THEN 2
    WHEN abs(${column}) < 8388608 THEN 3 WHEN abs(${column}) < 2147483648 THEN 4
    WHEN abs(${column}) < 140737488355328 THEN 6 ELSE 8 END)`;
}
