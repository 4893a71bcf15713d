/**
 * Every code Idem answers with. Codes are public API: they never change meaning
 * (docs/errors.md, docs/reference/errors.md). A model or a client switches on `code`; the text tells it what
 * to do next.
 */
export const IDEM_CODES = {
  /**
   * JSON-RPC error (code -32600, `data.code`): the same request id came again inside a session with
   * other content; nothing was run.
   */
  MCP_REQUEST_ID_REUSED: 'MCP_REQUEST_ID_REUSED',
  /** The same intent is being executed right now (another request, session or process started it); nothing new was started. */
  IDEM_IN_FLIGHT: 'IDEM_IN_FLIGHT',
  /**
   * The action was dispatched but its outcome is not known (a timeout, a crash of the dispatcher, a
   * connection lost after sending). It may have happened.
   */
  IDEM_OUTCOME_UNKNOWN: 'IDEM_OUTCOME_UNKNOWN',
  /** Irreversible tool (`replay: review`) with an unknown outcome: it may have happened, and an operator must resolve it. */
  IDEM_REVIEW_REQUIRED: 'IDEM_REVIEW_REQUIRED',
  /**
   * The execution waits for a human's approval (docs/approvals.md); nothing was dispatched yet. A
   * retry from any session or gateway attaches to it, with no second prompt.
   */
  IDEM_AWAITING_APPROVAL: 'IDEM_AWAITING_APPROVAL',
  /**
   * A human approved the execution and it has not run yet: the caller's next
   * identical call runs it, once, as that execution (approval does not dispatch by itself).
   */
  IDEM_APPROVED: 'IDEM_APPROVED',
  /**
   * Approval was refused, or expired undecided (`expired`), or the call's target or credential could
   * not be resolved, or an action tool's URL built from the arguments leads outside what the tool may
   * reach (docs/channels.md); nothing was dispatched.
   */
  IDEM_DENIED: 'IDEM_DENIED',
  /** The receipt table is at its bound (in all, or for this actor); this new request was not run. Safe to retry later. */
  IDEM_RECEIPTS_FULL: 'IDEM_RECEIPTS_FULL',
  /** Nothing happened: the intent could not be recorded (store down, disk full), or contention never settled. Safe to retry. */
  IDEM_NOT_EXECUTED: 'IDEM_NOT_EXECUTED',
  /** The arguments cannot be given an identity (the reason is one of INVALID_INPUT_REASONS); nothing was run. */
  IDEM_INVALID_INPUT: 'IDEM_INVALID_INPUT',
  /**
   * The call's business key already names an execution of a different request
   * (other arguments, or under a shared key another caller): nothing was sent;
   * `ref` and `state` are the original's. Cf. the IETF Idempotency-Key draft's 422.
   */
  IDEM_KEY_CONFLICT: 'IDEM_KEY_CONFLICT',
  /** The status tool was asked about a ref that does not exist for this caller. */
  IDEM_UNKNOWN_EXECUTION: 'IDEM_UNKNOWN_EXECUTION',
  /**
   * The caller's OAuth token lacks a scope the tool needs (`auth.oauth.tool_scopes`), found where no
   * HTTP 403 can be sent (the status tool's repeat of that tool); nothing was run.
   */
  IDEM_INSUFFICIENT_SCOPE: 'IDEM_INSUFFICIENT_SCOPE',
  /**
   * JSON-RPC error (code -32000, `data: {code, limit, max}`; HTTP 429 for the actor's cap, 503 for
   * the gateway's) to an HTTP `initialize`: the caller, or the gateway, is at its cap of open
   * sessions and every one has something in progress; no session was started.
   */
  IDEM_SESSIONS_FULL: 'IDEM_SESSIONS_FULL',
} as const;

export type IdemCode = (typeof IDEM_CODES)[keyof typeof IDEM_CODES];

/**
 * The codes of errors that reach an operator, never a model: a refused start, a
 * log line, a command's exit (docs/reference/errors.md#codes-for-operators). Named for the
 * part at fault and what is wrong with it (`IDEM_CONFIG_INVALID`), where an
 * answer's code names what happened to the call (`IDEM_NOT_EXECUTED`). Public
 * API too: they never change meaning.
 */
export const OPERATOR_CODES = {
  /**
   * The config file cannot be read, is not a valid Idem config, or names what cannot work (a
   * contract, a tool name, a credential); nothing was started. Said on stderr, exit 2.
   * @remedy Fix the file at the line named; `idem lint` checks it without starting.
   * @caller None: no gateway runs.
   */
  IDEM_CONFIG_INVALID: 'IDEM_CONFIG_INVALID',
  /**
   * A credential cannot be resolved (unset, a file others can read or another user owns); the
   * message names it, never its value. At start this refuses the config (IDEM_CONFIG_INVALID).
   * @remedy Set the variable, or fix the file's owner and mode (0600).
   * @caller IDEM_DENIED, nothing sent.
   */
  IDEM_CREDENTIAL_UNRESOLVED: 'IDEM_CREDENTIAL_UNRESOLVED',
  /**
   * The upstream went away with a request unanswered: whether it acted is unknown.
   * @remedy See why the upstream died (its stderr is in the gateway's log); resolve the unknown executions.
   * @caller IDEM_OUTCOME_UNKNOWN (or IDEM_REVIEW_REQUIRED).
   */
  IDEM_UPSTREAM_CLOSED: 'IDEM_UPSTREAM_CLOSED',
  /**
   * The upstream answered a request with JSON that is not a JSON-RPC reply: whether it acted is unknown.
   * @remedy Fix the upstream's output.
   * @caller IDEM_OUTCOME_UNKNOWN (or IDEM_REVIEW_REQUIRED).
   */
  IDEM_UPSTREAM_INVALID_REPLY: 'IDEM_UPSTREAM_INVALID_REPLY',
  /**
   * The request never left: the upstream was down or could not be started. Nothing happened.
   * @remedy Start or fix the upstream; the gateway restarts a command upstream by itself.
   * @caller IDEM_NOT_EXECUTED (safe to retry).
   */
  IDEM_UPSTREAM_UNAVAILABLE: 'IDEM_UPSTREAM_UNAVAILABLE',
  /**
   * A message was not (completely) written to a stdio upstream's stdin, so it cannot have been read.
   * Logged as IDEM_UPSTREAM_UNAVAILABLE.
   * @remedy As for IDEM_UPSTREAM_UNAVAILABLE.
   * @caller IDEM_NOT_EXECUTED.
   */
  IDEM_UPSTREAM_NOT_WRITTEN: 'IDEM_UPSTREAM_NOT_WRITTEN',
  /**
   * An OAuth issuer's metadata cannot be read, or names another issuer or no `jwks_uri`: tokens
   * cannot be checked now (tried again after a pause, not on every request).
   * @remedy Check `auth.oauth.issuers` and that the issuer is reachable, or set its `jwks_uri` (docs/auth.md).
   * @caller HTTP 503, nothing run.
   */
  IDEM_ISSUER_METADATA_UNAVAILABLE: 'IDEM_ISSUER_METADATA_UNAVAILABLE',
  /**
   * The console's operator token is missing, shorter than 16 characters, or in a file with loose
   * permissions; the console does not start.
   * @remedy Set IDEM_CONSOLE_TOKEN (or `console.token_env` / `token_file`) to a long random value (docs/console.md).
   * @caller None: the console is for operators.
   */
  IDEM_CONSOLE_TOKEN_INVALID: 'IDEM_CONSOLE_TOKEN_INVALID',
} as const;

export type OperatorCode = (typeof OPERATOR_CODES)[keyof typeof OPERATOR_CODES];

/** Why a value could not be canonicalized. Stable, documented in docs/reference/errors.md. */
export const INVALID_INPUT_REASONS = [
  /** `NaN`, `Infinity`, `-Infinity` (possible from library callers, not from JSON). */
  'non_finite_number',
  /** A string or key with an unpaired UTF-16 surrogate (RFC 8785 needs valid Unicode). */
  'lone_surrogate',
  /** An object that contains itself. */
  'cycle',
  /** Nesting deeper than 64 levels. */
  'too_deep',
  /** More than 100 000 values, or a canonical form longer than 4 MiB (the HTTP front's body limit). */
  'too_large',
  /** A `bigint`, a function, a symbol, `undefined` in an array, a sparse array, a non-plain object without `toJSON`. */
  'unsupported_type',
  /** The contract identifies the action by an argument (`scope.business_key`) the call does not give. */
  'missing_business_key',
  /**
   * An action tool's argument its template cannot carry: for SSH, what no shell quoting can (a NUL
   * byte, an object or array, a non-finite number); for HTTP, an object or array in the URL or a
   * header, or a line break, control character or character beyond Latin-1 in a header.
   */
  'unsafe_argument',
  /** An action tool's template (SSH command, HTTP URL or header) names an argument the call does not give. */
  'missing_argument',
] as const;

export type InvalidInputReason = (typeof INVALID_INPUT_REASONS)[number];

export class IdemError extends Error {
  override readonly name: string = 'IdemError';
  constructor(
    readonly code: IdemCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Arguments (or another value) that cannot be given a stable identity. */
export class InvalidInputError extends IdemError {
  override readonly name = 'InvalidInputError';
  constructor(
    readonly reason: InvalidInputReason,
    readonly path: string,
    message: string,
  ) {
    super(IDEM_CODES.IDEM_INVALID_INPUT, `${message} (at ${path || '$'})`);
  }
}

/**
 * The store could not be read or written. The engine turns this into
 * IDEM_NOT_EXECUTED before dispatch (fail closed).
 */
export class StoreUnavailableError extends IdemError {
  override readonly name: string = 'StoreUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(IDEM_CODES.IDEM_NOT_EXECUTED, message, options);
  }
}

/** Why a store's file was refused. Stable, documented in docs/reference/errors.md. */
export const STORE_REFUSAL_REASONS = [
  /**
   * The integrity check failed, the file is truncated, or a read or write met damage (from then on
   * the open store refuses every call until reopened); or one stored value no longer decodes (only
   * reads of that row are refused: SQLite keeps no checksums, so no check at open finds such damage).
   */
  'corrupt',
  /** Not a SQLite file, or its header is destroyed. */
  'not_a_database',
  /** The file or its directory cannot be written by the user running Idem. */
  'read_only',
  /** The file cannot be opened at all. */
  'cannot_open',
  /**
   * An fsync of the `-wal` file failed: what the disk holds of the last commits is unknown, so, as
   * PostgreSQL does, nothing more is written through that handle and every call fails closed until
   * the store is reopened (check the disk, start again; SQLite recovers from what reached it).
   */
  'sync_failed',
  /**
   * While the store was open, its file was deleted, another file was put in its place, it was
   * truncated, or its header was overwritten: what this process wrote may be gone, so a retry of
   * an action it recorded could run again. Every call fails closed (and readiness is down) until
   * an operator puts the file back and restarts; checked before every write and once a second.
   */
  'replaced',
  /**
   * At start: the store is empty or missing (a SQLite file gone or 0 bytes, a journal empty) while
   * the data directory's signed journal heads (`journal-head.json`) say executions were recorded
   * there (DESIGN §9); starting on it would run their retries again. Restore the backup, or
   * `idem store new --accept-lost-executions` (docs/operators.md). PostgreSQL too.
   */
  'lost',
] as const;

export type StoreRefusalReason = (typeof STORE_REFUSAL_REASONS)[number];

/**
 * The store's file cannot be trusted or written: it is refused (at open, or
 * from the first read that finds damage on), never used half-way. A store
 * that cannot read back what it holds cannot find an earlier execution, so
 * using it would dispatch twice. Still a StoreUnavailableError: a call that
 * meets it before dispatch gets IDEM_NOT_EXECUTED.
 */
export class StoreRefusedError extends StoreUnavailableError {
  override readonly name = 'StoreRefusedError';
  constructor(
    readonly reason: StoreRefusalReason,
    /** The file that was refused. */
    readonly path: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Thrown by a handler (or a dispatch channel) that does not know whether its
 * effect happened — a timeout after the request left, a dropped connection.
 * The execution becomes `unknown`, never `failed`.
 */
export class OutcomeUnknownError extends Error {
  override readonly name = 'OutcomeUnknownError';
  /** The answer the caller gets. */
  readonly code: IdemCode = IDEM_CODES.IDEM_OUTCOME_UNKNOWN;
  /**
   * The JSON-RPC error the target answered with, when that is why the outcome is unknown (it took
   * the call, then failed, maybe after acting). Kept with the unknown outcome, for whoever reviews
   * it; a task of the call stays working, quoting it (docs/tasks.md) — unless the contract says the
   * tool answers one only before it acts (`jsonrpc_errors: failed`).
   */
  readonly answeredWith: { code: number; message: string; data?: unknown } | undefined;

  constructor(message: string, answeredWith?: { code: number; message: string; data?: unknown }) {
    super(message);
    this.answeredWith = answeredWith;
  }
}

/**
 * Thrown by a dispatch channel that provably sent nothing (the target was
 * down before a byte left). The execution is retired and the caller told
 * IDEM_NOT_EXECUTED: retrying is safe and starts afresh.
 */
export class NotDispatchedError extends Error {
  override readonly name: string = 'NotDispatchedError';
  /** The answer the caller gets. */
  readonly code: IdemCode = IDEM_CODES.IDEM_NOT_EXECUTED;
}

/**
 * Thrown by a dispatch channel that refused to send before anything left: the
 * credential it names cannot be resolved, or the target is not one the tool
 * may reach (docs/approvals.md: "target or credential unresolved → deny"). The caller
 * is told IDEM_DENIED with the reason; the execution is retired, so a call
 * made after an operator fixed the cause is judged afresh.
 */
export class DispatchRefusedError extends NotDispatchedError {
  override readonly name = 'DispatchRefusedError';
  override readonly code: IdemCode = IDEM_CODES.IDEM_DENIED;
}

/** The config file cannot be read or is not valid (`idem gateway`, `idem lint`, `--config`): exit 2, nothing started. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code: OperatorCode = OPERATOR_CODES.IDEM_CONFIG_INVALID;
}

/** A credential that cannot be resolved; the message names it and its source, never a value. */
export class CredentialError extends Error {
  override readonly name = 'CredentialError';
  readonly code: OperatorCode = OPERATOR_CODES.IDEM_CREDENTIAL_UNRESOLVED;
}

/** The upstream went away with this request unanswered: whether it acted is unknown. */
export class UpstreamClosedError extends Error {
  override readonly name: string = 'UpstreamClosedError';
  readonly code: OperatorCode = OPERATOR_CODES.IDEM_UPSTREAM_CLOSED;
}

/** The upstream answered this request with a line that is JSON but not a JSON-RPC reply: whether it acted is unknown. */
export class UpstreamInvalidReplyError extends UpstreamClosedError {
  override readonly name = 'UpstreamInvalidReplyError';
  override readonly code: OperatorCode = OPERATOR_CODES.IDEM_UPSTREAM_INVALID_REPLY;
}

/** The request never left: the upstream was down. Nothing happened. */
export class UpstreamUnavailableError extends Error {
  override readonly name = 'UpstreamUnavailableError';
  readonly code: OperatorCode = OPERATOR_CODES.IDEM_UPSTREAM_UNAVAILABLE;
}

/** The message was not (completely) written to the upstream's stdin: it cannot have been read as a message. */
export class NotWrittenError extends Error {
  override readonly name = 'NotWrittenError';
  readonly code: OperatorCode = OPERATOR_CODES.IDEM_UPSTREAM_NOT_WRITTEN;
}

/** An issuer's metadata could not be read or does not describe this issuer: tokens cannot be checked now. */
export class IssuerMetadataError extends Error {
  override readonly name = 'IssuerMetadataError';
  readonly code: OperatorCode = OPERATOR_CODES.IDEM_ISSUER_METADATA_UNAVAILABLE;
}

/** The console's operator token cannot be had, or is not one a console may start with. */
export class ConsoleTokenError extends Error {
  override readonly name = 'ConsoleTokenError';
  readonly code: OperatorCode = OPERATOR_CODES.IDEM_CONSOLE_TOKEN_INVALID;
}

/** The packages Idem loads only for one feature each: optional peers, installed by whoever uses the feature (docs/adr/0038-optional-peer-packages.md). */
export const OPTIONAL_PACKAGES = {
  pg: 'The PostgreSQL store',
  ssh2: 'An SSH action tool',
  'prom-client': 'Prometheus metrics',
  '@opentelemetry/api': 'OpenTelemetry tracing',
} as const;
export type OptionalPackage = keyof typeof OPTIONAL_PACKAGES;

/**
 * A feature was asked for whose package is not installed (`pg` for a
 * PostgreSQL store, `ssh2` for an SSH tool, `prom-client` for `metrics:`).
 * Nothing was started; installing the package named by `packageName` fixes it.
 */
export class MissingPackageError extends Error {
  override readonly name = 'MissingPackageError';
  constructor(
    readonly packageName: OptionalPackage,
    options?: { cause?: unknown },
  ) {
    super(
      `${OPTIONAL_PACKAGES[packageName]} needs the package ${packageName}, which is not installed: ` +
        `run \`npm install ${packageName}\` where idem is installed ` +
        `(with npx: \`npx -y -p idem -p ${packageName} idem …\`)`,
      options,
    );
  }
}

/** The text of anything thrown: an Error's message, or the value itself (a throw need not be an Error). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
