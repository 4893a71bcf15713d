import type { ChildProcess } from 'node:child_process';
import { StdioClientTransport, type StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { NotWrittenError } from '../../errors.js';
import { type SkippedLine, StdoutLines } from './stdout-lines.js';

/**
 * The SDK's stdio client transport, with a `send` that settles on what
 * happened to the bytes. The SDK's own `send` resolves as soon as the message
 * is queued and, when the pipe is full, waits for a `drain` that a killed
 * upstream never emits, so a request being written when the upstream dies
 * would hang, and "queued" would pass for "sent".
 *
 * Here `send` resolves once the whole line is in the pipe (the upstream may
 * read it: whether it acted is then unknown if it dies) and rejects with
 * NotWrittenError when the write failed (a line cut short is never a message,
 * so nothing happened: libuv reports a write as failed only while some of its
 * bytes, the final newline at least, are still unwritten). Node calls a
 * write's callback on every path, including a stream destroyed meanwhile.
 *
 * Reading skips what is not a message (stdout-lines.ts) instead of reporting
 * it as an error: a banner or a `console.log` is not a lost connection.
 */
export class StdioUpstreamTransport extends StdioClientTransport {
  /** The last write: the next one starts when it has settled. */
  #writing: Promise<void> = Promise.resolve();
  #exit: string | undefined;
  /** Settles with how the process ended, once it has. */
  #exited: Promise<string> | undefined;
  #onSkipped: (skipped: SkippedLine) => void;
  /** Started ahead of its user (`hold`): what it read meanwhile, for the handlers `release` is given. */
  #held: (() => void)[] | undefined;

  constructor(server: StdioServerParameters, onSkipped: (skipped: SkippedLine) => void = () => {}) {
    super(server);
    this.#onSkipped = onSkipped;
    // The SDK reads stdout through this private field (append, readMessage, clear); see StdoutLines.
    (this as unknown as { _readBuffer: StdoutLines })._readBuffer = new StdoutLines(
      (skipped) => this.#onSkipped(skipped),
      server.maxBufferSize,
    );
  }

  /**
   * Started before anyone uses it (a spare process, gateway/upstream-spares.ts): the messages and
   * skipped lines it reads until `release` are kept, and given then to the handlers set by that
   * time, in the order they came. Nothing is sent to the process meanwhile.
   */
  hold(): void {
    const held: (() => void)[] = [];
    this.#held = held;
    this.onmessage = (message) => held.push(() => this.onmessage?.(message));
    this.#onSkipped = (skipped) => held.push(() => this.#onSkipped(skipped));
  }

  /** Its user has set `onmessage` (and its other handlers): what was held is given to them now. */
  release(onSkipped: (skipped: SkippedLine) => void): void {
    this.#onSkipped = onSkipped;
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const give of held) give();
  }

  /** The process was spawned and has not exited (nor been closed). */
  get running(): boolean {
    return this.#exit === undefined && this.#child() !== undefined;
  }

  /** How the process ended ("exited with code 1", "killed by SIGKILL"), once it has. */
  get exitStatus(): string | undefined {
    return this.#exit;
  }

  /**
   * How the process ended, waited for up to `withinMs`: a write that failed because the process
   * was exiting (EPIPE) comes before its exit status. Undefined if it is still running then.
   */
  async exitWithin(withinMs: number): Promise<string | undefined> {
    if (this.#exit !== undefined || !this.#exited) return this.#exit;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), withinMs);
    });
    return Promise.race([this.#exited, late]).finally(() => clearTimeout(timer));
  }

  override async start(): Promise<void> {
    await super.start();
    const child = this.#child();
    if (!child) return;
    this.#exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.#exit = signal ? `killed by ${signal}` : `exited with code ${code}`;
        resolve(this.#exit);
      }),
    );
  }

  /** The SDK keeps the child in a private field; without it the transport is not connected. */
  #child(): ChildProcess | undefined {
    return (this as unknown as { _process?: ChildProcess })._process;
  }

  /**
   * One message per write, one write at a time: Node joins writes waiting in
   * a stream's buffer into one `writev`, and a failed `writev` fails every
   * message in it, including complete ones the upstream may have read.
   */
  override send(message: JSONRPCMessage): Promise<void> {
    const written = this.#writing.then(() => this.#write(message));
    this.#writing = written.catch(() => {});
    return written;
  }

  #write(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child()?.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded)
      return Promise.reject(new NotWrittenError('the upstream process is not running'));
    return new Promise<void>((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) => {
        if (error) reject(new NotWrittenError(`write to the upstream failed: ${error.message}`));
        else resolve();
      });
    });
  }
}
