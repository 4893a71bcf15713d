export interface PostgresRowBytes {
  rows: number;
  /** avg(pg_column_size(row)) without the outcome: tuple header, null bitmap and values. */
  columnBytesPerRow: number;
  /**
   * The pages holding a compact copy of the table without its outcome column,
   * per row: what a row costs on the pages (line pointer, alignment, page
   * headers included). The figure the compactness target is stated in.
   */
  heapBytesPerRow: number;
  /** pg_indexes_size per row of the same indexes freshly built on that copy. */
  indexBytesPerRow: number;
  /** The live table as it stands, per row: outcomes kept in the row and old row versions not yet vacuumed included. */
  liveTableBytesPerRow: number;
  /** The live table's indexes as they stand, per row. */
  liveIndexBytesPerRow: number;
  /** Total outcome text, in bytes, that was left out. */
  outcomeBytes: number;
}

/**
 * What the measurement needs of a connection: a pg `Client` or `PoolClient` is one. Declared
 * here rather than taken from @types/pg, so that the published types need no pg.
 */
export interface PostgresConnection {
  query(text: string): Promise<{ rows: unknown[] }>;
}

const WITHOUT_OUTCOME = `created_at, updated_at, attach_until, dispatched_at, deadline_at, lease_expires_at,
  delivered_at, state, replay, active, id, fingerprint, actor, tool, session, claim_token, lease_owner,
  arguments_preview, note, request_digest`;

/**
 * Bytes per execution row without its outcome (the result payload), counted
 * by PostgreSQL itself in the schema on the connection's search_path. The
 * outcome column cannot be left out of a table's size, so the rows are copied
 * without it into a temporary table (in one transaction on `db`, dropped at
 * its end) and that is measured.
 */
export async function bytesPerExecutionRow(db: PostgresConnection): Promise<PostgresRowBytes> {
  await db.query('BEGIN');
  try {
    await db.query(
      `CREATE TEMPORARY TABLE idem_row_probe ON COMMIT DROP AS SELECT ${WITHOUT_OUTCOME} FROM executions`,
    );
    await db.query('ALTER TABLE idem_row_probe ADD PRIMARY KEY (id)');
    await db.query('CREATE UNIQUE INDEX ON idem_row_probe (fingerprint) WHERE active');
    await db.query('CREATE INDEX ON idem_row_probe (state, updated_at)');
    const { rows } = await db.query(`
      SELECT
        (SELECT count(*) FROM idem_row_probe)::float8 AS rows,
        (SELECT coalesce(avg(pg_column_size(p.*)), 0) FROM idem_row_probe p)::float8 AS columns,
        -- Pages that hold rows, not the relation's size: PostgreSQL 16+ extends a bulk-loaded
        -- table many pages at a time, and the empty ones are no row's cost.
        ((SELECT count(DISTINCT (ctid::text::point)[0]) FROM idem_row_probe)
          * current_setting('block_size')::int)::float8 AS heap,
        pg_indexes_size('idem_row_probe')::float8 AS indexes,
        pg_relation_size('executions')::float8 AS live_table,
        pg_indexes_size('executions')::float8 AS live_indexes,
        (SELECT coalesce(sum(octet_length(outcome)), 0) FROM executions)::float8 AS outcome_bytes`);
    await db.query('COMMIT');
    const m = rows[0] as Record<string, number>;
    const perRow = (bytes: number) => (m.rows === 0 ? 0 : bytes / m.rows!);
    return {
      rows: m.rows!,
      columnBytesPerRow: m.columns!,
      heapBytesPerRow: perRow(m.heap!),
      indexBytesPerRow: perRow(m.indexes!),
      liveTableBytesPerRow: perRow(m.live_table!),
      liveIndexBytesPerRow: perRow(m.live_indexes!),
      outcomeBytes: m.outcome_bytes!,
    };
  } catch (error) {
    await db.query('ROLLBACK').catch(() => {});
    throw error;
  }
}
