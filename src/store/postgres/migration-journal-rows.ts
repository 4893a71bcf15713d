import { ROW_FORMAT_TAG } from '../../journal/chain.js';

/**
 * Migration 8 (docs/adr/0053): PostgreSQL writes a store transaction's events as one journal
 * row, as SQLite does since its migration 9 (ADR 0052). Its own file only for the size of
 * migrations.ts (a Migration there; not imported from it, which would make a circle); once
 * shipped, never edited. Its block of 8 seqs is journal-rows.ts
 * JOURNAL_SEQ_BLOCK (journal-rows.test.ts checks the two agree).
 */
export const JOURNAL_ROWS_MIGRATION = {
  version: 8,
  name: 'one journal row per transaction, its seqs a block of the stream sequence',
  sql: `
      -- docs/adr/0053: a row carries a transaction's events (ADR 0052's format), hashed in SQL
      -- as chain.ts journalRowHash says. Rows written before keep events NULL and their hash.
      ALTER TABLE activity_journal ADD COLUMN events integer CHECK (events >= 1);
      ALTER TABLE sessions_journal ADD COLUMN events integer CHECK (events >= 1);

      -- A row's events are seq−n+1 … seq, and the stream's sequence is shared by every chain:
      -- each nextval now reserves a block of 8 seqs, v … v+7, that no other writer
      -- is given, and a row of n ≤ 8 events takes v … v+n−1 (longer transactions are split).
      -- A writer still on version 7's journal_append takes a block for its one event.
      ALTER SEQUENCE activity_journal_seq INCREMENT BY 8;
      ALTER SEQUENCE sessions_journal_seq INCREMENT BY 8;

      -- A row of several events has no execution_id of its own (its hash does not cover one):
      -- journalFor finds it here, and keeps the row's events of that execution only.
      CREATE TABLE journal_refs (
        seq          bigint NOT NULL,
        execution_id text COLLATE "C" NOT NULL,
        PRIMARY KEY (execution_id, seq)
      );

      -- The execution id and request ref of each event of a row's text, for the execution search
      -- (execution-list.ts). A text json refuses — a lone surrogate a client sent, escaped by
      -- JSON.stringify — gives nothing rather than failing the whole search.
      CREATE FUNCTION journal_row_refs(p_text text) RETURNS TABLE (execution_id text, request_ref text)
        LANGUAGE plpgsql IMMUTABLE AS $$
      BEGIN
        RETURN QUERY SELECT e ->> 1, e ->> 4 FROM json_array_elements(p_text::json) AS e;
      EXCEPTION WHEN others THEN
        RETURN;
      END
      $$;

      -- Version 7's journal_append, a row per element of p_text: p_events[i] events whose RFC 8785
      -- text (chain.ts rowEventsText, encoded by the client) is p_text[i]. The database adds only
      -- what it decides, seq and at, and hashes chain.ts journalRowHash:
      --   SHA-256(prev_hash ‖ "\\n" ‖ "idem-journal-row/v2" ‖ "\\n" ‖ "[" seq "," at "," n "]" ‖ "\\n" ‖ events)
      -- p_ref_row/p_ref_id: the execution ids each row holds events of (row by its index), for journal_refs.
      CREATE FUNCTION journal_append_rows(p_stream text, p_chain integer, p_now bigint, p_events integer[],
        p_text text[], p_ref_row integer[], p_ref_id text[]) RETURNS bigint LANGUAGE plpgsql AS $$
      DECLARE
        v_read bigint; v_seq bigint; v_prev text; v_hash text; v_at bigint; v_seqs bigint[];
      BEGIN
        SELECT seq, hash, greatest(at, coalesce(p_now, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint))
          INTO v_read, v_hash, v_at FROM journal_head WHERE stream = p_stream AND chain = p_chain;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'journal chain % of % is not registered', p_chain, p_stream;
        END IF;
        v_seq := v_read;
        FOR i IN 1 .. coalesce(cardinality(p_text), 0) LOOP
          IF p_events[i] IS NULL OR p_events[i] NOT BETWEEN 1 AND 8 THEN
            RAISE EXCEPTION 'a journal row holds 1 to 8 events, not %', p_events[i];
          END IF;
          v_seq := CASE p_stream WHEN 'activity' THEN nextval('activity_journal_seq')
            ELSE nextval('sessions_journal_seq') END + p_events[i] - 1;
          v_prev := v_hash;
          v_hash := encode(sha256(convert_to(v_prev || E'\\n${ROW_FORMAT_TAG}\\n[' || v_seq || ',' || v_at || ','
            || p_events[i] || E']\\n' || p_text[i], 'UTF8')), 'hex');
          v_seqs[i] := v_seq;
          IF p_stream = 'activity' THEN
            INSERT INTO activity_journal (seq, at, kind, detail, prev_hash, hash, chain, events)
            VALUES (v_seq, v_at, '', p_text[i], v_prev, v_hash, p_chain, p_events[i]);
          ELSE
            INSERT INTO sessions_journal (seq, at, kind, detail, prev_hash, hash, chain, events)
            VALUES (v_seq, v_at, '', p_text[i], v_prev, v_hash, p_chain, p_events[i]);
          END IF;
        END LOOP;
        IF p_stream = 'activity' AND cardinality(p_ref_id) > 0 THEN
          INSERT INTO journal_refs (seq, execution_id)
            SELECT v_seqs[u.r], u.id FROM unnest(p_ref_row, p_ref_id) AS u(r, id);
        END IF;
        UPDATE journal_head SET seq = v_seq, hash = v_hash, at = v_at
          WHERE stream = p_stream AND chain = p_chain AND seq = v_read;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'journal chain % of % was moved by another writer', p_chain, p_stream;
        END IF;
        RETURN v_seq;
      END
      $$;
    `,
};
