import { isDeepStrictEqual } from 'node:util';
import {
  heldStdioTransport,
  type StdioUpstreamTransport,
  type UpstreamOptions,
  type UpstreamSpec,
} from '../../dispatch/mcp/index.js';
import { messageOf } from '../../errors.js';
import type { GatewayConfig } from '../config/config.js';

type StdioSpec = Extract<UpstreamSpec, { command: string }>;

/** One upstream's spare: the process waiting for the next session, and the backoff of its replacement. */
interface Slot {
  /** What the spare was spawned with: a session whose spec differs does not take it. */
  spec: StdioSpec;
  spare: StdioUpstreamTransport | undefined;
  delayMs: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Upstream processes started ahead of the sessions that need them: a stateful
 * session's own stdio upstream is a process that must start (for a Node or
 * Python server, most of a second) before its initialize can be answered.
 * One spare per upstream is kept spawned and held — nothing sent to it, what
 * it prints kept — and the next session's connection takes it and sends the
 * client's initialize to it, as it would to a process it spawned itself; a
 * new spare is spawned in its place at once. Bounded: one process per
 * upstream beyond the sessions'. A spare is spawned from the spec a session
 * gets (command, args, cwd, the environment as it inherits it): a session
 * whose spec is not the spare's spawns its own, and the spare is replaced.
 * A spare that exits before it is taken is replaced after a backoff
 * (doubling, capped), and that is said in the log. `close()` ends them all.
 */
export class UpstreamSpares {
  readonly #slots = new Map<string, Slot>();
  readonly #stderr: UpstreamOptions['stderr'];
  readonly #secrets: UpstreamOptions['secrets'];
  readonly #warn: (message: string, fields: Record<string, unknown>) => void;
  readonly #firstDelayMs: number;
  readonly #maxDelayMs: number;
  #closed = false;

  /**
   * The spares a gateway keeps: one for each stdio upstream not `share: true` nor `spare: false`;
   * undefined when there is none.
   */
  static of(
    config: GatewayConfig,
    /** The upstreams as sessions get them, and how their processes are started (a session's context). */
    options: {
      upstreams: UpstreamSpec[];
      upstreamStderr?: UpstreamOptions['stderr'];
      secrets?: UpstreamOptions['secrets'];
    },
    warn: (message: string, fields?: Record<string, unknown>) => void,
  ): UpstreamSpares | undefined {
    const kept = new Set(
      Object.entries(config.upstreams)
        .filter(([, spec]) => 'command' in spec && !spec.share && spec.spare === true)
        .map(([name]) => name),
    );
    if (kept.size === 0) return undefined;
    return new UpstreamSpares({
      specs: options.upstreams.filter((spec) => kept.has(spec.name)),
      ...(options.upstreamStderr ? { stderr: options.upstreamStderr } : {}),
      ...(options.secrets ? { secrets: options.secrets } : {}),
      warn,
    });
  }

  constructor(options: {
    /** The upstreams that keep a spare: stdio ones (the caller leaves out `share: true` and `spare: false`). */
    specs: UpstreamSpec[];
    stderr?: UpstreamOptions['stderr'];
    /** Scrubbed from a spare's stderr (UpstreamOptions.secrets); its messages are, by the connection that takes it. */
    secrets?: UpstreamOptions['secrets'];
    warn(message: string, fields: Record<string, unknown>): void;
    restartDelayMs?: number;
    maxRestartDelayMs?: number;
  }) {
    this.#stderr = options.stderr;
    this.#secrets = options.secrets;
    this.#warn = options.warn;
    this.#firstDelayMs = options.restartDelayMs ?? 250;
    this.#maxDelayMs = options.maxRestartDelayMs ?? 10_000;
    for (const spec of options.specs) {
      if (!('command' in spec)) continue;
      const slot: Slot = { spec, spare: undefined, delayMs: this.#firstDelayMs, timer: undefined };
      this.#slots.set(spec.name, slot);
      this.#spawn(slot);
    }
  }

  /**
   * The spare of `spec`'s upstream, for a session's connection to take (UpstreamOptions.spare), if
   * one is running and was spawned as `spec` says; another is spawned in its place. Undefined: the
   * connection spawns its own.
   */
  take(spec: UpstreamSpec): StdioUpstreamTransport | undefined {
    const slot = this.#slots.get(spec.name);
    if (!slot || this.#closed || !('command' in spec)) return undefined;
    const spare = slot.spare;
    if (!spare?.running) return undefined;
    slot.spare = undefined;
    if (!isDeepStrictEqual(slot.spec, spec)) {
      // The environment (or the config) changed since it was spawned: it would not be what a session gets.
      void spare.close().catch(() => {});
      slot.spec = spec;
      this.#spawn(slot);
      return undefined;
    }
    // It lived until it served: the next one that dies starts the backoff afresh.
    slot.delayMs = this.#firstDelayMs;
    this.#spawn(slot);
    return spare;
  }

  /** The process ids of the spares waiting now. */
  get pids(): number[] {
    return [...this.#slots.values()].flatMap((slot) => (slot.spare?.pid ? [slot.spare.pid] : []));
  }

  /** Ends every spare (and the replacements due), and waits for their processes to exit. */
  async close(): Promise<void> {
    this.#closed = true;
    const closing: Promise<void>[] = [];
    for (const slot of this.#slots.values()) {
      clearTimeout(slot.timer);
      slot.timer = undefined;
      const spare = slot.spare;
      slot.spare = undefined;
      if (spare) closing.push(spare.close().catch(() => {}));
    }
    await Promise.all(closing);
  }

  #spawn(slot: Slot): void {
    if (this.#closed) return;
    const spare = heldStdioTransport(slot.spec, this.#stderr, this.#secrets);
    slot.spare = spare;
    // Until a connection takes it and sets its own: an exit now is a spare lost.
    spare.onclose = () => this.#lost(slot, spare, spare.exitStatus ?? 'its stdio closed');
    spare.onerror = (error) => this.#lost(slot, spare, messageOf(error));
    spare.start().catch((error: unknown) => this.#lost(slot, spare, messageOf(error)));
  }

  /** A spare went before it was taken (once per spare, whatever reports it): replaced after the backoff. */
  #lost(slot: Slot, spare: StdioUpstreamTransport, reason: string): void {
    if (slot.spare !== spare) return;
    slot.spare = undefined;
    void spare.close().catch(() => {});
    if (this.#closed) return;
    const delay = slot.delayMs;
    slot.delayMs = Math.min(delay * 2, this.#maxDelayMs);
    this.#warn(
      `a spare process of upstream ${slot.spec.name}, started ahead for the next session, ended before a session took it (${reason}); another is started in ${delay} ms`,
      { upstream: slot.spec.name, reason, retry_in_ms: delay },
    );
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      this.#spawn(slot);
    }, delay);
    slot.timer.unref();
  }
}
