import { afterEach, beforeEach } from 'vitest';
import type { ActivityEntry, ActivityEventInput } from '../../src/journal/events.js';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/index.js';
import type { ClaimInput, ExecutionStore } from '../../src/store/types.js';
import type { TestPostgres } from './postgres.js';
import { waitUntil } from './wait.js';

/** What usePostgresSchemas gives a test: a schema of its own, and stores closed after it. */
export interface PostgresSchemas {
  /** This test's schema (dropped after it). */
  readonly schema: string;
  /** Stores to close after the test. */
  readonly opened: ExecutionStore[];
  /** A PostgresStore on this test's schema, closed after the test. */
  open(options?: Partial<PostgresStoreOptions>): Promise<PostgresStore>;
  /** The test's schema, read beside the store. */
  sql<R extends object>(text: string, values?: unknown[]): Promise<R[]>;
}

/**
 * For the tests of one describe block, on the file's PostgreSQL (`postgres()`,
 * from postgresForTests): a fresh schema per test, and every store the test
 * opened closed before the schema is dropped.
 */
export function usePostgresSchemas(postgres: () => TestPostgres): PostgresSchemas {
  let current: Awaited<ReturnType<TestPostgres['freshSchema']>> | undefined;
  const opened: ExecutionStore[] = [];
  const schema = () => {
    if (!current) throw new Error('usePostgresSchemas: used outside a test');
    return current.schema;
  };
  beforeEach(async () => {
    current = await postgres().freshSchema();
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await current?.drop();
    current = undefined;
  });
  return {
    get schema() {
      return schema();
    },
    opened,
    async open(options = {}) {
      const store = await PostgresStore.open({ url: postgres().url, schema: schema(), ...options });
      opened.push(store);
      return store;
    },
    async sql<R extends object>(text: string, values: unknown[] = []): Promise<R[]> {
      const client = await postgres().admin().connect();
      try {
        await client.query(`SET search_path TO ${schema()}`);
        return (await client.query(text, values)).rows as R[];
      } finally {
        client.release();
      }
    },
  };
}

/** The database's clock, read beside the store's, to bracket what the store records. */
export async function databaseNow(postgres: TestPostgres): Promise<number> {
  const { rows } = await postgres
    .admin()
    .query<{ now: string }>('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now');
  return Number(rows[0]!.now);
}

/** The three events the engine journals with a claim. */
export function claimEvents(input: ClaimInput): ActivityEventInput[] {
  return [
    {
      kind: 'received',
      executionId: input.id,
      actor: input.actor,
      tool: input.tool,
      detail: { preview: '{}' },
    },
    { kind: 'accepted', executionId: input.id },
    { kind: 'dispatched', executionId: input.id },
  ];
}

/** Every entry of a store's activity journal, read page by page. */
export async function wholeJournal(store: ExecutionStore): Promise<ActivityEntry[]> {
  const all: ActivityEntry[] = [];
  for (;;) {
    const page = await store.readJournal(all.at(-1)?.seq ?? 0, 1000);
    if (page.length === 0) return all;
    all.push(...page);
  }
}

/** Waits until `condition` holds; fails after `timeoutMs` (the one wait loop is waitUntil's). */
export function until(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  return waitUntil('the condition', condition, timeoutMs);
}

/**
 * The activity journal of a PostgreSQL store as one SQL row per event (kind, execution_id,
 * detail: the event's detail as JSON text), from rows of either format: one event each, or a
 * transaction's events (migration 8, docs/adr/0053). Use as `FROM ${PG_JOURNAL_EVENTS} AS e`.
 */
export const PG_JOURNAL_EVENTS = `(
  SELECT seq, kind, execution_id, detail FROM activity_journal WHERE events IS NULL
  UNION ALL
  SELECT j.seq - j.events + x.n, x.e ->> 0, x.e ->> 1, (x.e -> 5)::text
  FROM activity_journal j, json_array_elements(j.detail::json) WITH ORDINALITY AS x(e, n)
  WHERE j.events IS NOT NULL
)`;
