/**
 * Defaults that more than one part applies — the gateway's config, the library,
 * the CLI, the engine — said once, so that a gateway and a library user get the
 * same. A default that only one module uses stays beside it, named (e.g.
 * DEFAULT_MAX_RECEIPTS in receipts/receipt-book.ts). Like errors.ts, this module
 * is below every other and imports nothing.
 */

/** The name of the tool through which an agent asks about an execution (`status_tool`). */
export const DEFAULT_STATUS_TOOL = 'idem_execution_status';

/** How often a task's client is told to ask about it (`pollIntervalMs`), unless its upstream task says otherwise. */
export const TASK_POLL_INTERVAL_MS = 1000;

/** How long finished executions are kept before a sweep trims them (`retention`, `idem sweep --retention`). */
export const DEFAULT_RETENTION = '48h';

/**
 * How often the store's upkeep runs (src/maintenance): the gateway's `sweep_interval`, the
 * library's `maintenanceIntervalMs`.
 */
export const DEFAULT_MAINTENANCE_INTERVAL = '30s';

/** The SQLite store's file in the data directory, when no store is named. */
export const SQLITE_STORE_FILE = 'idem.db';

/** What a tool's contract gets for what it leaves out (docs/contracts.md). */
export const CONTRACT_DEFAULTS = Object.freeze({
  /** How long a repeat of a finished call is recognised as the same action. */
  attachWindowMs: 15 * 60_000,
  /** When an unanswered dispatch becomes `unknown`. */
  timeoutMs: 10 * 60_000,
  /** How long a dispatcher's claim lasts without renewal. */
  leaseMs: 30_000,
  /** Under `task: optional`, how long a call runs before it is answered as a task. */
  taskAfterMs: 10_000,
});

/** How long the store has to answer a probe's read (`/readyz`, a metrics scrape) before it counts as unreachable. */
export const STORE_ANSWER_MS = 2_000;
