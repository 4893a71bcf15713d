// The one place the engine is assembled, for the gateway and the library alike: the data directory,
// the store, the fingerprint key, the known secrets, the receipt book, the engine and the maintenance
// loop. Every default is read from src/defaults.ts (or the part's own named one), and Idem's
// environment variables are read here for both products, so the two cannot drift apart again.
import { join } from 'node:path';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { durationMs } from '../contracts/duration.js';
import {
  DEFAULT_MAINTENANCE_INTERVAL,
  DEFAULT_RETENTION,
  DEFAULT_STATUS_TOOL,
  SQLITE_STORE_FILE,
} from '../defaults.js';
import { idemEnvironment } from '../environment.js';
import type { Approver, Logger } from '../executions/call.js';
import { ExecutionEngine } from '../executions/engine.js';
import type { CallObserver } from '../executions/observer.js';
import type { CallerInfo } from '../identity/actor.js';
import { resolveDataDir } from '../identity/data-dir.js';
import { Fingerprinter } from '../identity/fingerprint.js';
import { KnownSecrets } from '../identity/redaction.js';
import type { ActivityEventInput } from '../journal/events.js';
import { Maintenance } from '../maintenance/maintenance.js';
import { ReceiptBook, type ReceiptBookOptions } from '../receipts/receipt-book.js';
import { type IdScope, type ReceiptAnswer, ReceiptTransport } from '../receipts/receipt-transport.js';
import { openDataDirStore, type StoreSpec } from '../store/index.js';
import type { ExecutionStore } from '../store/types.js';
import { type Log, scrubbedLog } from '../support/log.js';

export interface RuntimeOptions {
  /** Keys, signed heads and the SQLite file by default. Default: IDEM_DATA_DIR, else a per-user directory. */
  dataDir?: string | undefined;
  /**
   * An open store (its owner closes it), or where to open one (given the data directory, as the
   * gateway's config says it). Default: IDEM_STORE_URL when it is a `postgres://` URL, else SQLite
   * at `<dataDir>/idem.db`.
   */
  store?: ExecutionStore | StoreSpec | ((dataDir: string) => StoreSpec | undefined) | undefined;
  /** Wraps the store before any part uses it (the gateway measures every operation there). */
  measure?: (store: ExecutionStore) => ExecutionStore;
  /** Default: IDEM_FINGERPRINT_KEY_FILE, else `<dataDir>/fingerprint.key`. */
  fingerprintKeyFile?: string | undefined;
  /** Default: IDEM_JOURNAL_SIGNING_KEY_FILE, else `<dataDir>/journal-signing.key`. */
  journalSigningKeyFile?: string | undefined;
  /** The status tool's name, quoted in advice. Default DEFAULT_STATUS_TOOL. */
  statusTool?: string | undefined;
  /** How long finished executions are kept. Default DEFAULT_RETENTION. */
  retention?: string | number | undefined;
  /** Maintenance every this many ms; 0 turns it off. Default DEFAULT_MAINTENANCE_INTERVAL. */
  maintenanceIntervalMs?: number | undefined;
  /** The receipt book's bounds; what it leaves out, RECEIPT_DEFAULTS. */
  receipts?: ReceiptBookOptions | undefined;
  /** Credential values to scrub from whatever is stored, answered or logged. Default: a new, empty set. */
  knownSecrets?: KnownSecrets | undefined;
  /** The operator's log, scrubbed of the known secrets. Default: the engine's own (errors to stderr). */
  logger?: Logger | undefined;
  approver?: Approver | undefined;
  observer?: CallObserver | undefined;
  /** Run before each maintenance pass (the gateway takes over the upstream tasks whose follower was lost). */
  resume?: () => Promise<unknown>;
}

/** What `open` resolved before the parts are built. */
interface Opened {
  dataDir: string;
  store: ExecutionStore;
  owns: boolean;
  fingerprintKeyFile: string | undefined;
  journalSigningKeyFile: string | undefined;
}

/** What a product asks of the receipt layer around one of its transports. */
export interface ReceiptScope {
  actorOf: (info: CallerInfo) => string;
  hasEffects: (tool: string) => boolean;
  idScope?: IdScope | undefined;
  onAnswered?: (how: ReceiptAnswer) => void;
}

/**
 * The engine and what it needs, built once per gateway or `Idem`. The product adds its own front
 * (sessions and upstreams, or `idem.tool` on an SDK server) and calls `close` last.
 */
export class Runtime {
  readonly dataDir: string;
  readonly store: ExecutionStore;
  readonly fingerprinter: Fingerprinter;
  readonly knownSecrets: KnownSecrets;
  readonly receipts: ReceiptBook;
  readonly engine: ExecutionEngine;
  /** The given logger (its optional levels as no-ops), every line scrubbed of the known secrets. */
  readonly log: Log;
  /** Receipts, sweep, approval expiry and head signing, every maintenance interval. */
  readonly #maintenance: Maintenance;
  /** Whether the store was opened here, and so is closed here. */
  readonly #ownsStore: boolean;

  private constructor(options: RuntimeOptions, opened: Opened) {
    this.dataDir = opened.dataDir;
    this.#ownsStore = opened.owns;
    this.store = options.measure ? options.measure(opened.store) : opened.store;
    this.fingerprinter = Fingerprinter.forDataDir(this.dataDir, keyFile(opened.fingerprintKeyFile));
    this.knownSecrets = options.knownSecrets ?? new KnownSecrets();
    this.log = operatorLog(options.logger, this.knownSecrets);
    const retentionMs = durationMs(options.retention ?? DEFAULT_RETENTION, 'retention');
    const intervalMs =
      options.maintenanceIntervalMs ?? durationMs(DEFAULT_MAINTENANCE_INTERVAL, 'maintenance interval');
    this.receipts = new ReceiptBook(options.receipts);
    this.engine = new ExecutionEngine({
      store: this.store,
      fingerprinter: this.fingerprinter,
      knownSecrets: this.knownSecrets,
      statusTool: options.statusTool ?? DEFAULT_STATUS_TOOL,
      // A task lives as long as its execution is kept: the retention while maintenance trims, else until removed.
      taskTtlMs: intervalMs > 0 ? retentionMs : null,
      ...(options.logger ? { logger: this.log } : {}),
      ...(options.approver ? { approver: options.approver } : {}),
      ...(options.observer ? { observer: options.observer } : {}),
    });
    this.#maintenance = new Maintenance({
      store: this.store,
      retentionMs,
      receipts: this.receipts,
      signing: { dataDir: this.dataDir, ...keyFile(opened.journalSigningKeyFile) },
      ...(options.resume ? { resume: options.resume } : {}),
      warn: (message, fields) => this.log.warn(message, fields),
    });
    this.#maintenance.start(intervalMs);
  }

  /**
   * Reads Idem's environment variables for what the options leave out, opens the store (a lost
   * one is refused: store/lost-store.ts) and builds the rest; a store opened here is closed again
   * if what follows fails.
   */
  static async open(options: RuntimeOptions = {}): Promise<Runtime> {
    const environment = idemEnvironment();
    const dataDir = resolveDataDir(options.dataDir ?? environment.dataDir);
    const keys = {
      // An empty value is unset, as for the variables.
      fingerprintKeyFile: options.fingerprintKeyFile || environment.fingerprintKeyFile,
      journalSigningKeyFile: options.journalSigningKeyFile || environment.journalSigningKeyFile,
    };
    const given = typeof options.store === 'function' ? options.store(dataDir) : options.store;
    if (given !== undefined && isStore(given))
      return new Runtime(options, { dataDir, store: given, owns: false, ...keys });
    const store = await openDataDirStore(given ?? defaultStoreSpec(dataDir, environment.storeUrl), dataDir);
    try {
      return new Runtime(options, { dataDir, store, owns: true, ...keys });
    } catch (error) {
      await store.close().catch(() => {});
      throw error;
    }
  }

  /** Request-id receipts around a transport, journaled in this runtime's store. */
  receiptTransport(transport: Transport, scope: ReceiptScope): ReceiptTransport {
    return new ReceiptTransport(transport, {
      book: this.receipts,
      fingerprinter: this.fingerprinter,
      actorOf: scope.actorOf,
      hasEffects: scope.hasEffects,
      ...(scope.idScope ? { idScope: scope.idScope } : {}),
      onEvent: (event) => {
        this.store.appendEvents([event]).catch(() => {});
      },
      onSession: (event) => this.journalSession(event),
      ...(scope.onAnswered ? { onAnswered: scope.onAnswered } : {}),
    });
  }

  /** An agent run's event (its start and end, an upstream restarted under it): the sessions journal, scrubbed. */
  journalSession(event: ActivityEventInput): void {
    this.store.appendEvents([this.knownSecrets.redact(event)], 'sessions').catch(() => {});
  }

  /** No further maintenance passes (one under way runs to its end); the rest stays up until `close`. */
  stopMaintenance(): void {
    this.#maintenance.stop();
  }

  /**
   * Stops maintenance; a store opened here has what was journaled covered by a signed head, then
   * closes. A store given to `open` is left to its owner, open and unsigned.
   */
  async close(): Promise<void> {
    this.#maintenance.stop();
    if (!this.#ownsStore) return;
    await this.#maintenance.close();
    await this.store.close();
  }
}

/** With no store named: IDEM_STORE_URL when it is a PostgreSQL URL, else SQLite in the data directory. */
function defaultStoreSpec(dataDir: string, storeUrl: string | undefined): StoreSpec {
  if (storeUrl && /^postgres(ql)?:\/\//i.test(storeUrl)) return { kind: 'postgres', url: storeUrl };
  return { kind: 'sqlite', path: join(dataDir, SQLITE_STORE_FILE) };
}

function isStore(store: ExecutionStore | StoreSpec): store is ExecutionStore {
  return typeof (store as ExecutionStore).claim === 'function';
}

/** A key file option, only when one is named (an empty value is unset, as for the variables). */
function keyFile(path: string | undefined): { keyFile?: string } {
  return path ? { keyFile: path } : {};
}

function operatorLog(logger: Logger | undefined, secrets: KnownSecrets): Log {
  return scrubbedLog(
    {
      error: (message, fields) => logger?.error(message, fields),
      warn: (message, fields) => logger?.warn(message, fields),
      info: (message, fields) => logger?.info?.(message, fields),
      debug: (message, fields) => logger?.debug?.(message, fields),
    },
    (value) => secrets.redact(value),
  );
}
