import { createHash } from 'node:crypto';
import { SSH_MARKER_DIR } from '../../defaults.js';

/** One entry of the SSH inventory: where a tool's commands run, as whom, and which host key to expect. */
export interface SshHost {
  /** The inventory name tools refer to (also the execution's target, with the address). */
  name: string;
  host: string;
  /** Default 22. */
  port?: number;
  user: string;
  /** Name of the credential holding the private key (OpenSSH or PEM, no passphrase); never the key itself. */
  credential: string;
  /** The host key's fingerprint as `ssh-keygen -l` prints it: `SHA256:` and unpadded base64. */
  hostKey: string;
  /**
   * Where the execution markers live on the host. A relative path is relative to the user's
   * home directory (an SSH session starts there). Default SSH_MARKER_DIR (`.idem/markers`).
   */
  markerDir?: string;
}

/** Resolves a credential name to its value (the private key). The value is used to log in, then dropped. */
export type ResolveCredential = (name: string) => Promise<string | Buffer>;

const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}$/;

/** Throws with a message saying what is wrong with an inventory entry; returns it with defaults filled in. */
export function checkedHost(host: SshHost): Required<SshHost> {
  if (!FINGERPRINT.test(host.hostKey)) {
    throw new Error(
      `ssh host "${host.name}": hostKey must be the SHA256 fingerprint as ssh-keygen -l prints it ` +
        `(SHA256: followed by 43 base64 characters), e.g. from \`ssh-keyscan ${host.host} | ssh-keygen -lf -\``,
    );
  }
  const port = host.port ?? 22;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`ssh host "${host.name}": port must be an integer from 1 to 65535`);
  }
  const markerDir = host.markerDir ?? SSH_MARKER_DIR;
  if (markerDir === '' || markerDir.includes('\0') || /[\n\r]/.test(markerDir)) {
    throw new Error(`ssh host "${host.name}": markerDir must be a non-empty path on one line`);
  }
  return { ...host, port, markerDir };
}

/** The fingerprint OpenSSH shows for a host key blob: SHA-256, base64 without padding. */
export function hostKeyFingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}
