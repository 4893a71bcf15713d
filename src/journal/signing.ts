import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  linkSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/** A journal head (seq, hash) signed with the installation's Ed25519 key. */
export interface SignedHead {
  stream: 'activity' | 'sessions';
  seq: number;
  hash: string;
  signedAt: number;
  /** base64 Ed25519 signature over `signedHeadMessage(...)`. */
  signature: string;
}

export const SIGNING_KEY_FILE = 'journal-signing.key';
export const PUBLIC_KEY_FILE = 'journal-signing.pub';
export const SIGNED_HEAD_FILE = 'journal-head.json';

/** The exact bytes signed: a fixed, versioned layout. */
export function signedHeadMessage(head: Omit<SignedHead, 'signature'>): Buffer {
  return Buffer.from(
    `idem-journal-head/v1\n${head.stream}\n${head.seq}\n${head.hash}\n${head.signedAt}`,
    'utf8',
  );
}

/**
 * The data directory's Ed25519 key pair, created on first use (private key
 * 0600, PKCS#8 PEM; public key SPKI PEM beside it, to hand to auditors).
 */
export function loadOrCreateSigningKey(dataDir: string): { privateKeyPem: string; publicKeyPem: string } {
  const privatePath = join(dataDir, SIGNING_KEY_FILE);
  const publicPath = join(dataDir, PUBLIC_KEY_FILE);
  if (!existsSync(privatePath)) {
    const { privateKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    // Same race-free creation as the fingerprint key: write privately, then link into place.
    const temp = `${privatePath}.${process.pid}.tmp`;
    writeFileSync(temp, pem, { mode: 0o600, flag: 'wx' });
    try {
      linkSync(temp, privatePath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(temp);
    }
    chmodSync(privatePath, 0o600);
  }
  const privateKeyPem = readFileSync(privatePath, 'utf8');
  const publicKeyPem = createPublicKey(createPrivateKey(privateKeyPem)).export({
    type: 'spki',
    format: 'pem',
  }) as string;
  if (!existsSync(publicPath) || readFileSync(publicPath, 'utf8') !== publicKeyPem) {
    writeFileSync(publicPath, publicKeyPem, { mode: 0o644 });
  }
  return { privateKeyPem, publicKeyPem };
}

export function signHead(head: Omit<SignedHead, 'signature'>, privateKeyPem: string): SignedHead {
  const signature = sign(null, signedHeadMessage(head), createPrivateKey(privateKeyPem)).toString('base64');
  return { ...head, signature };
}

export function verifySignedHead(head: SignedHead, publicKeyPem: string): boolean {
  try {
    return verify(
      null,
      signedHeadMessage(head),
      createPublicKey(publicKeyPem),
      Buffer.from(head.signature, 'base64'),
    );
  } catch {
    return false;
  }
}

/** Reads `journal-head.json` (one signed head per stream), if present. */
export function readSignedHeads(path: string): SignedHead[] {
  if (!existsSync(path)) return [];
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as { heads?: SignedHead[] };
  return parsed.heads ?? [];
}

export function writeSignedHeads(path: string, heads: SignedHead[]): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify({ heads }, null, 2)}\n`, { mode: 0o644 });
  // rename() is atomic: a reader sees the old heads or the new ones, never half a file.
  renameSync(temp, path);
}
