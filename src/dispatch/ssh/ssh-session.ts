import type { ClientChannel } from 'ssh2';
import {
  DispatchRefusedError,
  MissingPackageError,
  NotDispatchedError,
  OutcomeUnknownError,
} from '../../errors.js';
import { loadSsh2 } from '../../support/optional-packages.js';
import { hostKeyFingerprint, type SshHost } from './host.js';

export interface RunOnHostOptions {
  host: Required<SshHost>;
  privateKey: string | Buffer;
  /** The whole remote script (one exec request). */
  script: string;
  /** Connecting, host-key check and login must be done by then; else nothing was sent. */
  connectTimeoutMs: number;
  /** After the script was sent: when its outcome becomes unknown. */
  timeoutMs: number;
  /** More output than this on either stream is not our script's report: the outcome is then unknown. */
  maxOutputBytes: number;
}

export interface HostOutput {
  stdout: Buffer;
  stderr: Buffer;
  /** The script's exit status (null when the host reported a signal instead). */
  exitCode: number | null;
}

/**
 * Runs one script on a host over one SSH connection, and says which side of
 * "sent" each failure is on: before the exec request left (no TCP, no
 * handshake, a host key that is not the inventory's, a refused login, a
 * session the server would not open) → NotDispatchedError, nothing ran; after
 * it (a dropped connection, a timeout, output that is not a report) →
 * OutcomeUnknownError — the script may be running, which the marker decides.
 * Without ssh2 installed nothing can be sent: DispatchRefusedError naming it.
 */
export async function runOnHost(options: RunOnHostOptions): Promise<HostOutput> {
  const { Client } = await sshClient();
  const { host } = options;
  const where = `${host.user}@${host.host}:${host.port} (ssh host "${host.name}")`;
  return new Promise<HostOutput>((resolve, reject) => {
    const client = new Client();
    let sent = false;
    let settled = false;
    let presented: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const size = { stdout: 0, stderr: 0 };

    const finish = (outcome: { ok: HostOutput } | { error: Error }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.end();
      // A host that does not answer the disconnect still must not keep the socket open.
      setImmediate(() => client.destroy());
      if ('ok' in outcome) resolve(outcome.ok);
      else reject(outcome.error);
    };
    const failed = (detail: string) =>
      finish({
        error: sent
          ? new OutcomeUnknownError(`The command was sent to ${where}, then ${detail}.`)
          : new NotDispatchedError(`Nothing was sent to ${where}: ${detail}.`),
      });

    client.on('error', (error: Error & { level?: string }) => {
      if (presented !== undefined && presented !== host.hostKey) {
        failed(
          `its host key ${presented} is not the inventory's ${host.hostKey}. Unknown or changed host keys are ` +
            'refused; if the host key was changed on purpose, an operator must update the inventory',
        );
      } else if (error.level === 'client-authentication') {
        failed(`the host refused the key of credential "${host.credential}" for user "${host.user}"`);
      } else if (error.level === 'client-timeout') {
        failed(`no SSH handshake within ${options.connectTimeoutMs} ms`);
      } else {
        failed(`the connection failed (${error.message})`);
      }
    });
    client.on('close', () => failed('the connection closed'));
    client.on('ready', () => {
      // From here on the script may run: every failure is on the far side of "sent".
      sent = true;
      timer = setTimeout(() => failed(`no answer came within ${options.timeoutMs} ms`), options.timeoutMs);
      timer.unref();
      try {
        client.exec(options.script, (error, stream) => {
          if (error) {
            // The server answered the exec request (or the session request) with a refusal: it ran nothing.
            const refused = error.message === 'Unable to exec' || 'reason' in error;
            if (refused) sent = false;
            failed(refused ? `the server refused to start a session (${error.message})` : error.message);
            return;
          }
          collect(stream);
        });
      } catch (error) {
        // ssh2 throws before writing anything when the socket is already gone.
        sent = false;
        failed(`the connection was gone before the command could be sent (${(error as Error).message})`);
      }
    });

    const collect = (stream: ClientChannel) => {
      const take = (which: 'stdout' | 'stderr', into: Buffer[]) => (chunk: Buffer) => {
        size[which] += chunk.length;
        if (size[which] > options.maxOutputBytes) {
          failed(
            `it wrote more than ${options.maxOutputBytes} bytes to ${which}, which is not a marker report`,
          );
          return;
        }
        into.push(chunk);
      };
      stream.on('error', (error: Error) => failed(`the session failed (${error.message})`));
      stream.on('data', take('stdout', stdout));
      stream.stderr.on('data', take('stderr', stderr));
      stream.on('close', (code: number | null | undefined) => {
        finish({
          ok: { stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr), exitCode: code ?? null },
        });
      });
    };

    try {
      client.connect({
        host: host.host,
        port: host.port,
        username: host.user,
        privateKey: options.privateKey,
        readyTimeout: options.connectTimeoutMs,
        keepaliveInterval: 10_000,
        keepaliveCountMax: 3,
        // Only the inventory's key is accepted: never "accept new", never a known_hosts file.
        hostVerifier: (key: Buffer) => {
          presented = hostKeyFingerprint(key);
          return presented === host.hostKey;
        },
      });
    } catch (error) {
      // ssh2 parses the key synchronously; its messages name the problem, never the key's content.
      failed(
        `the private key of credential "${host.credential}" cannot be used (${(error as Error).message})`,
      );
    }
  });
}

/**
 * ssh2, loaded on the first SSH call rather than when idem is imported (an optional peer). Its
 * absence refuses the call, as an unresolvable credential does: nothing was sent, and a call
 * made once an operator installed it is judged afresh.
 */
async function sshClient() {
  try {
    return await loadSsh2();
  } catch (error) {
    if (error instanceof MissingPackageError) throw new DispatchRefusedError(error.message, { cause: error });
    throw error;
  }
}
