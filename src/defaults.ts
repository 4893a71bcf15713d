/**
 * Defaults that more than one part applies or states — the gateway's config and
 * its descriptions (the published schema, docs/reference/), the library, the CLI,
 * the engine, the fronts — said once, so that a gateway and a library user get the
 * same, and a default changed here changes its documentation too. A default that
 * only one module uses, and no description states, stays beside it, named. Like
 * errors.ts, this module is below every other and imports nothing.
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

/** The installation's fingerprint key in the data directory, unless `fingerprint_key_file` names one. */
export const FINGERPRINT_KEY_FILE = 'fingerprint.key';

/** The journal signing key in the data directory, unless `journal_signing_key_file` names one. */
export const JOURNAL_SIGNING_KEY_FILE = 'journal-signing.key';

/** What a tool's contract gets for what it leaves out (docs/contracts.md). */
export const CONTRACT_DEFAULTS = Object.freeze({
  /** Without a contract or `readOnlyHint: true`: an unknown outcome waits for an operator. */
  replay: 'review',
  /** Which repeats are the same intent: the same caller, from any session or process. */
  scope: 'actor',
  /** How long a repeat of a finished call is recognised as the same action. */
  attachWindowMs: 15 * 60_000,
  /** A repeat after a completed call: the stored result, unless the session moved on since. */
  afterCompletion: 'new_if_moved_on',
  /** The same under a business key or a window scope, which name the action: the stored result. */
  afterCompletionNamed: 'replay',
  /** A new request after a failure: a new attempt. */
  afterFailure: 'new',
  /** A JSON-RPC error an upstream answers after it took the call: the outcome is unknown. */
  jsonrpcErrors: 'unknown',
  /** When an unanswered dispatch becomes `unknown`. */
  timeoutMs: 10 * 60_000,
  /** How long a dispatcher's claim lasts without renewal. */
  leaseMs: 30_000,
  approval: 'none',
  /** Whether the client's human may decide an approval by MCP elicitation. */
  elicitation: 'allow',
  /** Whether a call may become an MCP task (an upstream tool listed with taskSupport gets `optional`). */
  task: 'off',
  /** Under `task: optional`, how long a call runs before it is answered as a task. */
  taskAfterMs: 10_000,
} as const);

/**
 * The HTTP front's bounds (`listen.http`, and `serveStreamableHttp` in the library): how long a
 * session may sit idle, used or not (front/idle-sessions.ts says why), how many may be open
 * (front/session-table.ts), and the connection timeouts (front/http-options.ts).
 */
export const HTTP_FRONT_DEFAULTS = Object.freeze({
  sessionIdleMs: 10 * 60_000,
  sessionUnusedMs: 60_000,
  maxSessions: 128,
  maxSessionsPerActor: 16,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 5_000,
});

/**
 * Request-id receipts (`receipts:`, the library's `receipts`). A receipt answers a resend of the
 * very same message, which a transport or a retrying HTTP client sends within seconds; later
 * repeats are the intent layer's. So receipts are kept 2 minutes, and up to 100 000 of them: the
 * bound refuses new calls only past ~800 calls/s sustained. One actor may hold a tenth of that
 * (~80 calls/s sustained), so it takes ten actors at their limit to fill the book.
 */
export const RECEIPT_DEFAULTS = Object.freeze({
  maxReceipts: 100_000,
  maxReceiptsPerActor: 10_000,
  retentionMs: 2 * 60_000,
});

/** What a stdio upstream inherits of the gateway's environment (`env_inherit`): all but Idem's own variables. */
export const UPSTREAM_ENV_INHERIT = 'all';

/** An HTTP action tool with no `timeout` and no contract timeout: no full answer by then is unknown. */
export const HTTP_TOOL_TIMEOUT_MS = 30_000;

/** Where an SSH host keeps execution markers (`marker_dir`), relative to the user's home. */
export const SSH_MARKER_DIR = '.idem/markers';

/** How long the store has to answer a probe's read (`/readyz`, a metrics scrape) before it counts as unreachable. */
export const STORE_ANSWER_MS = 2_000;

/**
 * How long a gateway (or a library server that calls `drain()`) waits on SIGTERM/SIGINT for the
 * calls under way to finish and be recorded before it exits (`shutdown_grace`): what outlives it
 * is left to become `unknown`. 25 s covers a normal tool call (seconds; an HTTP action tool's own
 * default timeout is 30 s, most answer in a few) and ends inside Kubernetes' default 30 s
 * before SIGKILL, with time left to close upstreams and the store. Under a supervisor that waits
 * less (`docker stop`: 10 s), set it below that supervisor's timeout.
 */
export const DEFAULT_SHUTDOWN_GRACE = '25s';
