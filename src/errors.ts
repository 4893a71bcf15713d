/**
 * Every code Idem answers with. Codes are public API: they never change meaning
 * (docs/errors.md). A model or a client switches on `code`; the text tells it what
 * to do next.
 */
export const IDEM_CODES = {
  /** JSON-RPC error: the same request id came again inside a session with other content. */
  MCP_REQUEST_ID_REUSED: 'MCP_REQUEST_ID_REUSED',
  /** The same intent is being executed right now; nothing new was started. */
  IDEM_IN_FLIGHT: 'IDEM_IN_FLIGHT',
  /** The action was dispatched but its outcome is not known. It may have happened. */
  IDEM_OUTCOME_UNKNOWN: 'IDEM_OUTCOME_UNKNOWN',
  /** Irreversible tool with an unknown outcome: an operator must resolve it. */
  IDEM_REVIEW_REQUIRED: 'IDEM_REVIEW_REQUIRED',
  /** The execution waits for a human's approval; nothing was dispatched yet. */
  IDEM_AWAITING_APPROVAL: 'IDEM_AWAITING_APPROVAL',
  /**
   * A human approved the execution and it has not run yet: the caller's next
   * identical call runs it, once, as that execution (approval does not dispatch by itself).
   */
  IDEM_APPROVED: 'IDEM_APPROVED',
  /** Approval was refused, or expired undecided, or the call's target or credential could not be resolved; nothing was dispatched. */
  IDEM_DENIED: 'IDEM_DENIED',
  /** The receipt table is at its bound; this new request was not run. Safe to retry later. */
  IDEM_RECEIPTS_FULL: 'IDEM_RECEIPTS_FULL',
  /** Nothing happened (e.g. the intent could not be recorded). Safe to retry. */
  IDEM_NOT_EXECUTED: 'IDEM_NOT_EXECUTED',
  /** The arguments cannot be given an identity (see the reason); nothing was run. */
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
   * The caller's OAuth token lacks a scope the tool needs, found where no HTTP
   * 403 can be sent (the status tool's repeat of that tool); nothing was run.
   */
  IDEM_INSUFFICIENT_SCOPE: 'IDEM_INSUFFICIENT_SCOPE',
} as const;

export type IdemCode = (typeof IDEM_CODES)[keyof typeof IDEM_CODES];

/** Why a value could not be canonicalized. Stable, documented in docs/errors.md. */
export type InvalidInputReason =
  | 'non_finite_number'
  | 'lone_surrogate'
  | 'cycle'
  | 'too_deep'
  | 'too_large'
  | 'unsupported_type'
  | 'missing_business_key'
  /** An action channel cannot pass this value on safely (an SSH argument with a NUL byte, an object). */
  | 'unsafe_argument'
  /** A command template names an argument the call does not give. */
  | 'missing_argument';

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

/** Why a store's file was refused. Stable, documented in docs/errors.md. */
export type StoreRefusalReason =
  | 'corrupt'
  | 'not_a_database'
  | 'read_only'
  | 'cannot_open'
  | 'sync_failed'
  /** Empty or missing, while the data directory's signed journal heads say executions were recorded (DESIGN §9). */
  | 'lost';

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
}

/**
 * Thrown by a dispatch channel that provably sent nothing (the target was
 * down before a byte left). The execution is retired and the caller told
 * IDEM_NOT_EXECUTED: retrying is safe and starts afresh.
 */
export class NotDispatchedError extends Error {
  override readonly name: string = 'NotDispatchedError';
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
}

/** The packages Idem loads only for one feature each: optional peers, installed by whoever uses the feature (docs/decisions.md). */
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
