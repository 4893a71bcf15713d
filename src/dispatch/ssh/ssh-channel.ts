import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ProbeAnswer, StatusProbe } from '../../contracts/contract.js';
import { NotDispatchedError, OutcomeUnknownError } from '../../errors.js';
import { tailWithoutSecrets } from '../../identity/secret-cut.js';
import type { ToolResult } from '../../store/outcome.js';
import type { ActionChannel, ActionDispatch } from '../channel.js';
import { CommandTemplate } from './command-template.js';
import { checkedHost, type ResolveCredential, type SshHost } from './host.js';
import {
  MARKER_DEFAULTS,
  type MarkerReport,
  type MarkerSettings,
  parseMarkerReport,
  parseRunReport,
  probeScript,
  runScript,
} from './markers.js';
import { runOnHost } from './ssh-session.js';

/** One SSH action tool: which host, which command, and how its exit code reads. */
export interface SshToolSpec {
  host: SshHost;
  /** Shell command with `{{argument}}` placeholders (see CommandTemplate). */
  command: string;
  /** After the command was sent: when its outcome becomes unknown (the contract's timeout). */
  timeoutMs: number;
  /** Resolving the credential, connecting and logging in must each take no longer (default 10 s): nothing was sent. */
  connectTimeoutMs?: number;
  /** Exit codes that mean the action succeeded (default [0]); any other is `failed`. */
  okExitCodes?: readonly number[];
  /** Bytes kept (and returned) of the end of each of stdout and stderr (default 64 KiB). */
  outputLimitBytes?: number;
  /** Finished markers older than this are removed from the host (default 7 days). */
  markerRetentionDays?: number;
  /**
   * The operation as the execution records it (part of its fingerprint): `exec`. The library's
   * `sshTool` keeps `tools/call`, which its executions were recorded with before it ran as a
   * channel, so that a retry of one of those still matches it.
   */
  recordedMethod?: string;
}

/** Reading a marker is quick whatever the command's own timeout is. */
const PROBE_TIMEOUT_MS = 15_000;

/** An exec report is the two tails and a header line; more than this is not our script talking. */
const REPORT_OVERHEAD_BYTES = 1024;

/**
 * The SSH action channel (docs/channels-ssh.md): runs a command on an inventory host at
 * most once per execution id, guarded by a durable marker on the host, and
 * reads that marker to recover an execution whose outcome was lost.
 *
 * Outcomes: anything that fails before the command was sent (credential,
 * connection, host key, login) → NotDispatchedError (IDEM_NOT_EXECUTED, safe
 * to retry); an exit code in `okExitCodes` → completed, any other → failed
 * (the target answered); a connection lost or a timeout after sending →
 * OutcomeUnknownError, and the marker tells later what happened.
 */
export class SshChannel implements ActionChannel {
  readonly kind = 'ssh';
  readonly method: string;
  /** Where the effect lands, as the intent fingerprint and the status tool name it. */
  readonly target: string;
  /** The credential's name (never its value). */
  readonly credential: string;
  /** An unknown outcome is learned from the execution's marker, without running the command again. */
  readonly recover: StatusProbe = ({ executionId }) => this.probe(executionId);
  readonly template: CommandTemplate;
  readonly #host: Required<SshHost>;
  readonly #markers: MarkerSettings;
  readonly #okExitCodes: readonly number[];
  readonly #timeoutMs: number;
  readonly #connectTimeoutMs: number;
  readonly #resolveCredential: ResolveCredential;
  readonly #knownSecrets: () => readonly string[];

  /**
   * `knownSecrets` gives the secret values resolved so far (credentials): an
   * output tail the host cut where a secret stood must not keep its end.
   */
  constructor(
    spec: SshToolSpec,
    resolveCredential: ResolveCredential,
    knownSecrets: () => readonly string[] = () => [],
  ) {
    this.#host = checkedHost(spec.host);
    this.template = new CommandTemplate(spec.command);
    this.target = `ssh://${this.#host.user}@${this.#host.host}:${this.#host.port}`;
    this.credential = this.#host.credential;
    this.method = spec.recordedMethod ?? 'exec';
    this.#markers = {
      dir: this.#host.markerDir,
      outputLimit: spec.outputLimitBytes ?? MARKER_DEFAULTS.outputLimit,
      retentionDays: spec.markerRetentionDays ?? MARKER_DEFAULTS.retentionDays,
    };
    if (!(this.#markers.outputLimit >= 0) || !(this.#markers.retentionDays >= 1)) {
      throw new Error('ssh tool: outputLimitBytes must be ≥ 0 and markerRetentionDays ≥ 1');
    }
    this.#okExitCodes = spec.okExitCodes ?? [0];
    this.#timeoutMs = spec.timeoutMs;
    this.#connectTimeoutMs = spec.connectTimeoutMs ?? 10_000;
    this.#resolveCredential = resolveCredential;
    this.#knownSecrets = knownSecrets;
  }

  /** The command for these arguments. Throws InvalidInputError (nothing is sent) for what quoting cannot carry. */
  command(args: Readonly<Record<string, unknown>>): string {
    return this.template.render(args);
  }

  /** Throws InvalidInputError for arguments quoting cannot carry: asked before anything is claimed. */
  check(args: Record<string, unknown>): void {
    this.command(args);
  }

  dispatch(args: Record<string, unknown>, ctx: ActionDispatch): Promise<ToolResult> {
    // read_only is refused when the tool is made (refuseReadOnly), so the engine always hands over an id.
    if (!ctx.executionId) throw new Error('an SSH action needs an execution id for its marker');
    return this.run(ctx.executionId, this.command(args));
  }

  /** Runs `command` on the host under `executionId`'s marker; a marker already there is read, not run over. */
  async run(executionId: string, command: string): Promise<CallToolResult> {
    const output = await this.#run(runScript(this.#markers, executionId, command), this.#timeoutMs);
    const report = parseRunReport(output.stdout, output.stderr);
    if (!report) {
      throw new OutcomeUnknownError(
        `The command was sent to ssh host "${this.#host.name}", but its answer is not a marker report ` +
          `(exit status ${output.exitCode}).`,
      );
    }
    const { marker } = report;
    if (marker.state === 'unavailable') {
      throw new NotDispatchedError(
        `The marker directory ${this.#markers.dir} cannot be created on ssh host "${this.#host.name}", ` +
          'so the command was not started.',
      );
    }
    if (marker.state !== 'exit') {
      throw new OutcomeUnknownError(
        `Execution ${executionId} already has a marker on ssh host "${this.#host.name}" that records a start ` +
          'and no end: the command is still running, or it stopped without recording an exit code.',
      );
    }
    return this.#result(marker);
  }

  /** Reads the marker of `executionId` (the status probe): an exit code is the real outcome; anything else is unknown. */
  async probe(executionId: string): Promise<ProbeAnswer> {
    const output = await this.#run(probeScript(this.#markers, executionId), PROBE_TIMEOUT_MS);
    const marker = parseMarkerReport(output.stdout, output.stderr);
    if (marker?.state !== 'exit') return { outcome: 'unknown' };
    const result = this.#result(marker);
    return result.isError ? { outcome: 'failed', result } : { outcome: 'completed', result };
  }

  async #run(script: string, timeoutMs: number) {
    let privateKey: string | Buffer;
    let timer: NodeJS.Timeout | undefined;
    try {
      privateKey = await Promise.race([
        this.#resolveCredential(this.#host.credential),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${this.#connectTimeoutMs} ms`)),
            this.#connectTimeoutMs,
          );
        }),
      ]);
    } catch (error) {
      throw new NotDispatchedError(
        `Credential "${this.#host.credential}" could not be resolved (${(error as Error).message}); nothing was sent.`,
      );
    } finally {
      clearTimeout(timer);
    }
    return runOnHost({
      host: this.#host,
      privateKey,
      script,
      connectTimeoutMs: this.#connectTimeoutMs,
      timeoutMs,
      maxOutputBytes: this.#markers.outputLimit + REPORT_OVERHEAD_BYTES,
    });
  }

  #result(marker: Extract<MarkerReport, { state: 'exit' }>): CallToolResult {
    const ok = this.#okExitCodes.includes(marker.code);
    const stdout = this.#tail(marker.stdout, marker.stdoutBytes);
    const stderr = this.#tail(marker.stderr, marker.stderrBytes);
    const lines = [`Exit code ${marker.code} on ssh host "${this.#host.name}".`];
    if (stdout) lines.push(`stdout${tailNote(marker.stdout, marker.stdoutBytes)}:\n${stdout}`);
    if (stderr) lines.push(`stderr${tailNote(marker.stderr, marker.stderrBytes)}:\n${stderr}`);
    return {
      ...(ok ? {} : { isError: true }),
      content: [{ type: 'text', text: lines.join('\n') }],
      structuredContent: {
        exit_code: marker.code,
        stdout,
        stderr,
        stdout_bytes: marker.stdoutBytes,
        stderr_bytes: marker.stderrBytes,
      },
    };
  }

  /** A kept output tail as text; one the host cut is scrubbed of secrets before its edge is judged. */
  #tail(kept: Buffer, total: number): string {
    const text = kept.toString('utf8');
    return kept.length < total ? tailWithoutSecrets(text, this.#knownSecrets()) : text;
  }
}

function tailNote(kept: Buffer, total: number): string {
  return kept.length < total ? ` (last ${kept.length} of ${total} bytes)` : '';
}
