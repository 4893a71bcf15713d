// Longer than most files on purpose: it implements every method of the ExecutionStore interface
// for PostgreSQL, each a few lines over the SQL (sql.ts), transactions (transactions.ts) and error
// classification (errors.ts) that live beside it — the same shape as the SQLite store.
import { messageOf, StoreUnavailableError } from '../../errors.js';
import { encodeOptional, postgresFingerprint } from '../../identity/fingerprint-columns.js';
import { envelopeTail, eventDetailText } from '../../journal/chain.js';
import type { ActivityEntry, ActivityEventInput, JournalStream } from '../../journal/events.js';
import { withOutcomeDigest } from '../../journal/outcome-digest.js';
import type { ExecutionState } from '../../journal/states.js';
import { transitionMustSync } from '../durability.js';
import { holderChange } from '../lease.js';
import { type ApprovalColumns, approvalFromColumns, entryFromColumns } from '../sql-columns.js';
import type {
  ApprovalFilter,
  ApprovalRequest,
  ClaimInput,
  ClaimOptions,
  ClaimResult,
  DecideApprovalInput,
  DecideApprovalResult,
  ExecutionFilter,
  ExecutionRecord,
  ExecutionStore,
  SweepResult,
  TransitionInput,
} from '../types.js';
import { APPROVAL_SQL } from './approval-sql.js';
import { connectionConfig, MIGRATION_TIMEOUT_MS, poolConfig } from './connection.js';
import { pgDriver } from './driver.js';
import { ignore, toStoreError } from './errors.js';
import { migrate } from './migrations.js';
import { POSTGRES_DEFAULTS, type PostgresStoreOptions } from './options.js';
import { bytesPerExecutionRow, type PostgresRowBytes } from './row-bytes.js';
import { type ExecutionRow, type JournalRow, SQL, toRecord } from './sql.js';
import { Connections, last, query } from './transactions.js';

export { POSTGRES_DEFAULTS, type PostgresStoreOptions } from './options.js';

/**
 * Several gateway processes (or hosts) sharing one PostgreSQL database.
 *
 * The claim is one INSERT … ON CONFLICT DO NOTHING against a partial unique
 * index: of any number of concurrent claims, in any number of processes, the
 * database lets exactly one insert. A write and the journal entries that
 * describe it are one statement: the database hashes the entries onto a chain
 * of this handle's own (journal_append, migrations v4), so a journaled claim is
 * one round trip, and no row is locked by every gateway. Each write in flight
 * holds one of the handle's chains; there are as many as writes were ever in
 * flight at once (docs/postgres.md, "One chain per writer").
 */
export class PostgresStore implements ExecutionStore {
  readonly kind = 'postgres' as const;
  readonly #db: Connections;
  /** This handle's journal chains that no write holds now. */
  readonly #idleChains: number[] = [];
  /** Writes waiting for a chain, when all `#maxChains` are held. */
  readonly #chainWaiters: ((chain: number | undefined) => void)[] = [];
  /** Chains registered by this handle (or being registered), at most `#maxChains`. */
  #chains = 0;
  /** As many as writes can run at once: the pool's size. */
  readonly #maxChains: number;

  /**
   * Connects, brings the schema up to date and returns the store; StoreUnavailableError if it
   * cannot, MissingPackageError if pg is not installed.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const pg = await pgDriver();
    const connection = connectionConfig(options);
    // Migrations get a connection of their own, without the per-call timeouts: a
    // migration may take long, and so may waiting for another process's.
    const client = new pg.Client({ ...connection, statement_timeout: MIGRATION_TIMEOUT_MS });
    client.on('error', ignore);
    try {
      await client.connect();
      await migrate(client, options.schema === undefined ? {} : { schema: options.schema });
    } catch (error) {
      if (error instanceof StoreUnavailableError) throw error;
      const mapped = toStoreError(error);
      if (mapped instanceof StoreUnavailableError) throw mapped;
      throw new StoreUnavailableError(`cannot open the PostgreSQL store: ${messageOf(error)}`, {
        cause: error,
      });
    } finally {
      await client.end().catch(ignore);
    }
    return new PostgresStore(options, new Connections(pg, poolConfig(pg, options, connection)));
  }

  private constructor(options: PostgresStoreOptions, connections: Connections) {
    this.#maxChains = options.pool?.max ?? POSTGRES_DEFAULTS.poolMax;
    this.#db = connections;
  }

  async claim(input: ClaimInput, options: ClaimOptions = {}): Promise<ClaimResult> {
    const events = options.events ?? [];
    const fingerprint = postgresFingerprint.encode(input.fingerprint);
    const approval = input.state === 'awaiting_approval' ? input.approval : undefined;
    return this.#withChain(events, async (journal) => {
      const claim = query<ExecutionRow>(SQL.claim, [
        events.length > 0,
        wholeMs(input.attachWindowMs),
        input.state === 'dispatched' ? wholeMs(input.dispatchTimeoutMs ?? 0) : null,
        wholeMs(input.leaseMs),
        input.id,
        fingerprint,
        input.actor,
        input.tool,
        input.session,
        input.replay,
        input.state,
        input.claimToken,
        input.leaseOwner,
        input.argumentsPreview,
        encodeOptional(postgresFingerprint, input.requestDigest),
        ...journal,
      ]);
      const holder = query<ExecutionRow>(SQL.findActive, [fingerprint]);

      // The common case: one statement, one round trip (autocommit), journal included. A lost
      // claim reads the holder on the same connection: under a storm of identical calls, a
      // loser queues for the pool once, not twice.
      if (options.replacing === undefined && approval === undefined) {
        return this.#db.connection(async (db) => {
          const [row] = (await claim(db)).rows;
          if (row) return { won: true, record: toRecord(row) };
          const [active] = (await holder(db)).rows;
          return { won: false, record: active && toRecord(active) };
        });
      }
      return this.#db.transaction(async (tx) => {
        const retire =
          options.replacing === undefined ? [] : [query(SQL.retire, [options.replacing, fingerprint])(tx.db)];
        const [row] = (await last(retire, claim(tx.db))).rows;
        if (!row) {
          const read = holder(tx.db);
          // Whatever `replacing` retired stays active: a lost claim changes nothing.
          tx.rollback();
          const [active] = (await read).rows;
          return { won: false, record: active && toRecord(active) };
        }
        if (approval) {
          tx.defer(
            query(APPROVAL_SQL.insert, [
              input.id,
              approval.policy,
              approval.channel,
              approval.target,
              approval.credentialRef,
              approval.earlier,
              row.read_at,
              wholeMs(approval.expiresInMs),
            ])(tx.db),
          );
        }
        return { won: true, record: toRecord(row) };
      });
    });
  }

  async transition(t: TransitionInput): Promise<ExecutionRecord | undefined> {
    const events = withOutcomeDigest(t.id, t.outcome, t.events) ?? [];
    return this.#withChain(events, (journal) =>
      this.#db.use(async (db) => {
        const [row] = (
          await query<ExecutionRow>(transitionMustSync(t) ? SQL.transition.sync : SQL.transition.lazy, [
            events.length > 0,
            t.id,
            t.to,
            t.from,
            t.token ?? null,
            t.requireStale === true,
            holderChange(t.holder),
            t.holder?.token ?? null,
            t.holder?.owner ?? null,
            t.holder ? wholeMs(t.holder.leaseMs) : null,
            t.dispatchTimeoutMs === undefined ? null : wholeMs(t.dispatchTimeoutMs),
            t.outcome === undefined ? null : JSON.stringify(t.outcome),
            t.delivered === true,
            t.note ?? null,
            t.release === true,
            ...journal,
          ])(db)
        ).rows;
        return row && toRecord(row);
      }),
    );
  }

  async renewLease(id: string, token: string, leaseMs: number): Promise<boolean> {
    return this.#db.use(
      async (db) => (await query(SQL.renewLease, [id, token, wholeMs(leaseMs)])(db)).rowCount === 1,
    );
  }

  async markDelivered(id: string, events: ActivityEventInput[] = []): Promise<void> {
    await this.#withChain(events, (journal) =>
      this.#db.use((db) => query(SQL.markDelivered, [events.length > 0, id, ...journal])(db)),
    );
  }

  async get(id: string): Promise<ExecutionRecord | undefined> {
    return this.#db.use(async (db) => {
      const [row] = (await query<ExecutionRow>(SQL.get, [id])(db)).rows;
      return row && toRecord(row);
    });
  }

  async findActive(fingerprint: string): Promise<ExecutionRecord | undefined> {
    return this.#db.use(async (db) => {
      const [row] = (await query<ExecutionRow>(SQL.findActive, [postgresFingerprint.encode(fingerprint)])(db))
        .rows;
      return row && toRecord(row);
    });
  }

  async list(filter: ExecutionFilter = {}): Promise<ExecutionRecord[]> {
    const states = filter.state === undefined ? null : ([] as ExecutionState[]).concat(filter.state);
    return this.#db.use(async (db) => {
      const { rows } = await db.query<ExecutionRow>(SQL.list, [
        states,
        filter.tool ?? null,
        filter.actor ?? null,
        filter.since ?? null,
        filter.limit ?? 100,
      ]);
      return rows.map(toRecord);
    });
  }

  async appendEvents(events: ActivityEventInput[], stream: JournalStream = 'activity'): Promise<void> {
    if (events.length === 0) return;
    await this.#withChain(events, (journal) =>
      this.#db.use((db) => query(SQL.append.lazy, [stream, ...journal])(db)),
    );
  }

  async readJournal(
    afterSeq = 0,
    limit = 1000,
    stream: JournalStream = 'activity',
  ): Promise<ActivityEntry[]> {
    return this.#db.use(async (db) =>
      (await query<JournalRow>(SQL.journal[stream].read, [afterSeq, limit])(db)).rows.map(entryFromColumns),
    );
  }

  async journalHead(stream: JournalStream = 'activity'): Promise<{ seq: number; hash: string } | undefined> {
    return this.#db.use(async (db) => {
      const [head] = (await query<{ seq: number; hash: string }>(SQL.journalHead, [stream])(db)).rows;
      // Registered chains start at seq 0, the empty chain.
      return head && head.seq > 0 ? { seq: head.seq, hash: head.hash } : undefined;
    });
  }

  async journalChains(
    stream: JournalStream = 'activity',
  ): Promise<{ chain: number; seq: number; hash: string }[]> {
    return this.#db.use(
      async (db) =>
        (await query<{ chain: number; seq: number; hash: string }>(SQL.journalChains, [stream])(db)).rows,
    );
  }

  async journalFor(executionId: string): Promise<ActivityEntry[]> {
    return this.#db.use(async (db) =>
      (await query<JournalRow>(SQL.journalFor, [executionId])(db)).rows.map(entryFromColumns),
    );
  }

  async sweep(options: { retentionMs: number; dryRun?: boolean }): Promise<SweepResult> {
    const retentionMs = wholeMs(options.retentionMs);
    if (options.dryRun) {
      return this.#db.use(async (db) => {
        const [stale, trimmable] = await Promise.all([
          query<ExecutionRow>(SQL.wouldExpire, [])(db),
          query<{ n: number }>(SQL.wouldTrim, [retentionMs])(db),
        ]);
        return {
          expired: stale.rows.map((row) => ({ ...toRecord(row), state: 'unknown' as const })),
          trimmed: trimmable.rows[0]?.n ?? 0,
        };
      });
    }
    // A chain is held for the whole transaction: which rows expire is known only inside it.
    return this.#holdingChain((chain) =>
      this.#db.transaction(async (tx) => {
        const { db } = tx;
        const trim = query(SQL.trim, [retentionMs])(db);
        const trimSessions = query(APPROVAL_SQL.trimSessions, [retentionMs])(db);
        const expire = query<ExecutionRow>(SQL.expire, [])(db);
        const [trimmed, expired] = await Promise.all([trim, expire, trimSessions]);
        // RETURNING gives no order; by id is creation order, as the journal should read.
        const rows = expired.rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        if (rows.length > 0) {
          const events = rows.map(
            (row): ActivityEventInput => ({
              kind: 'lease_expired',
              executionId: row.id,
              actor: row.actor,
              tool: row.tool,
              detail: { state: 'unknown' },
            }),
          );
          tx.defer(query(SQL.append.sync, ['activity', ...journalParams(events, chain)])(db));
        }
        return { expired: rows.map(toRecord), trimmed: trimmed.rowCount ?? 0 };
      }),
    );
  }

  async getApproval(id: string): Promise<ApprovalRequest | undefined> {
    return this.#db.use(async (db) => {
      const [row] = (await query<ApprovalColumns>(APPROVAL_SQL.get, [id])(db)).rows;
      return row && approvalFromColumns(row);
    });
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<ApprovalRequest[]> {
    return this.#db.use(async (db) =>
      (
        await query<ApprovalColumns>(APPROVAL_SQL.list, [filter.pending === true, filter.limit ?? 100])(db)
      ).rows.map(approvalFromColumns),
    );
  }

  async decideApproval(input: DecideApprovalInput): Promise<DecideApprovalResult> {
    const events = input.events ?? [];
    return this.#withChain(events, (journal) =>
      this.#db.transaction(async (tx) => {
        const decide = query<{ id: string }>(APPROVAL_SQL.decide, [
          input.id,
          input.decision,
          input.by,
          input.via,
          input.reason ?? null,
        ])(tx.db);
        const [decided] = (await decide).rows;
        const read = async () => {
          const [execution, request] = await Promise.all([
            query<ExecutionRow>(SQL.get, [input.id])(tx.db),
            query<ApprovalColumns>(APPROVAL_SQL.get, [input.id])(tx.db),
          ]);
          const row = execution.rows[0];
          const approval = request.rows[0];
          return { record: row && toRecord(row), approval: approval && approvalFromColumns(approval) };
        };
        if (!decided) {
          const now = await read();
          tx.rollback();
          return { decided: false, ...now };
        }
        // The chain's head is locked after the decision, so it is held from here to COMMIT only.
        if (events.length > 0) tx.defer(query(SQL.append.sync, ['activity', ...journal])(tx.db));
        const now = await read();
        if (!now.record || !now.approval) throw new Error(`the decision on ${input.id} cannot be read back`);
        return { decided: true, record: now.record, approval: now.approval };
      }),
    );
  }

  async sessionApproved(actor: string, session: string, tool: string): Promise<boolean> {
    return this.#db.use(
      async (db) =>
        ((await query(APPROVAL_SQL.sessionApproved, [actor, session, tool])(db)).rowCount ?? 0) > 0,
    );
  }

  async now(): Promise<number> {
    return this.#db.use(async (db) => (await query<{ now: number }>(SQL.now, [])(db)).rows[0]!.now);
  }

  async close(): Promise<void> {
    await this.#db.close();
  }

  /** Bytes one execution row takes without its outcome, as PostgreSQL counts them (see row-bytes.ts). */
  async measureRowBytes(): Promise<PostgresRowBytes> {
    return this.#db.connection((client) => bytesPerExecutionRow(client));
  }

  /**
   * Runs `work` holding one of this handle's chains (#takeChain), with the
   * journal parameters of `events` (journalParams). No two writes in flight share a chain, so their
   * appends never wait for each other. A chain whose write failed is dropped,
   * not reused: its statement may still be running on a connection the pool
   * gave up on. Without events, no chain is held.
   */
  async #withChain<T>(events: ActivityEventInput[], work: (journal: unknown[]) => Promise<T>): Promise<T> {
    if (events.length === 0) return work(journalParams([], null));
    return this.#holdingChain((chain) => work(journalParams(events, chain)));
  }

  /** Runs `work` holding one of this handle's chains (see #withChain). */
  async #holdingChain<T>(work: (chain: number) => Promise<T>): Promise<T> {
    const chain = await this.#takeChain();
    let result: T;
    try {
      result = await work(chain);
    } catch (error) {
      this.#chains--;
      this.#giveChain(undefined);
      throw error;
    }
    this.#giveChain(chain);
    return result;
  }

  /**
   * An idle chain, else a new one while fewer than the pool's size exist (no
   * more writes than that can run at once), else the next one given back.
   */
  async #takeChain(): Promise<number> {
    const idle = this.#idleChains.pop();
    if (idle !== undefined) return idle;
    if (this.#chains >= this.#maxChains) {
      const given = await new Promise<number | undefined>((resolve) => this.#chainWaiters.push(resolve));
      if (given !== undefined) return given;
      // A dropped chain made room: register one in its place.
    }
    this.#chains++;
    try {
      return await this.#registerChain();
    } catch (error) {
      this.#chains--;
      this.#giveChain(undefined);
      throw error;
    }
  }

  /** Hands `chain` to the next waiter, or keeps it idle; `undefined`: a chain was dropped, a waiter may register one. */
  #giveChain(chain: number | undefined): void {
    const waiter = this.#chainWaiters.shift();
    if (waiter) waiter(chain);
    else if (chain !== undefined) this.#idleChains.push(chain);
  }

  async #registerChain(): Promise<number> {
    return this.#db.use(
      async (db) => (await query<{ chain: number }>(SQL.registerChain, [])(db)).rows[0]!.chain,
    );
  }
}

/**
 * The journal parameters of a statement that appends `events` to `chain`:
 * the chain, then one array per column — the columns stored, the canonical
 * detail and the envelope's tail (chain.ts), which the database hashes. All
 * entries go in with one statement.
 */
function journalParams(events: ActivityEventInput[], chain: number | null): unknown[] {
  if (events.length === 0) return [chain, null, null, null, null, null, null, null];
  return [
    chain,
    events.map((e) => e.kind),
    events.map((e) => e.executionId ?? null),
    events.map((e) => e.actor ?? null),
    events.map((e) => e.tool ?? null),
    events.map((e) => e.requestRef ?? null),
    events.map(eventDetailText),
    events.map(envelopeTail),
  ];
}

/** Times are bigint columns, which refuse a fraction rather than round it. */
const wholeMs = Math.round;
