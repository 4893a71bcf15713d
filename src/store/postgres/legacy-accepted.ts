import type pg from 'pg';
import { envelopeTail, eventDetailText } from '../../journal/chain.js';
import { LEGACY_ACCEPTED } from '../../journal/states.js';
import { UPGRADED_TO, upgradeEvent } from '../legacy-accepted.js';
import { CLOCK } from './sql.js';

/**
 * Migration 8's step (store/legacy-accepted.ts) on a schema of version 7, inside the migration's
 * transaction: each `accepted` row becomes `authorized`, journaled on a chain of the upgrade's
 * own (journal_register_chain, version 4) by version 7's journal_append, which hashes in SQL
 * what chain.ts gives it. Self-contained — its own statements — so that later versions of the
 * store's statements cannot change what it does.
 */
export async function upgradeAccepted(db: Pick<pg.ClientBase, 'query'>): Promise<void> {
  const { rows } = await db.query<{ id: string; actor: string; tool: string }>(
    'SELECT id, actor, tool FROM executions WHERE state = $1 ORDER BY id FOR UPDATE',
    [LEGACY_ACCEPTED],
  );
  if (rows.length === 0) return;
  const events = rows.map(upgradeEvent);
  const chain = (await db.query<{ chain: number }>('SELECT journal_register_chain() AS chain')).rows[0]!
    .chain;
  await db.query(
    `SELECT journal_append('activity', $1::integer, NULL, $2::text[], $3::text[], $4::text[], $5::text[],
       $6::text[], $7::text[], $8::text[])`,
    [
      chain,
      events.map((e) => e.kind),
      events.map((e) => e.executionId),
      events.map((e) => e.actor),
      events.map((e) => e.tool),
      events.map(() => null),
      events.map(eventDetailText),
      events.map(envelopeTail),
    ],
  );
  await db.query(`UPDATE executions SET state = $1, updated_at = ${CLOCK} WHERE id = ANY($2::text[])`, [
    UPGRADED_TO,
    rows.map((row) => row.id),
  ]);
}
