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
import { dirname, join } from 'node:path';
import { JOURNAL_SIGNING_KEY_FILE } from '../defaults.js';

/** A journal head (seq, hash) signed with the installation's Ed25519 key. */
export interface SignedHead {
  stream: 'activity' | 'sessions';
  /** The writer's chain (chain.ts chainGenesis); absent for chain 0, the one chain of a single-writer store. */
  chain?: number;
  seq: number;
  hash: string;
  signedAt: number;
  /** base64 Ed25519 signature over `signedHeadMessage(...)`. */
  signature: string;
}

export const PUBLIC_KEY_FILE = 'journal-signing.pub';
export const SIGNED_HEAD_FILE = 'journal-head.json';

/**
 * The exact bytes signed: a fixed, versioned layout. A head of chain 0 keeps
 * v1, so heads signed before chains existed still verify; any other chain is
 * named in v2, so a head cannot be moved to another writer's chain.
 */
export function signedHeadMessage(head: Omit<SignedHead, 'signature'>): Buffer {
  const text = head.chain
    ? `idem-journal-head/v2\n${head.stream}\n${head.chain}\n${head.seq}\n${head.hash}\n${head.signedAt}`
    : `idem-journal-head/v1\n${head.stream}\n${head.seq}\n${head.hash}\n${head.signedAt}`;
  return Buffer.from(text, 'utf8');
}

/** The chain a head covers: 0 when it names none. */
export function chainOf(head: { chain?: number }): number {
  return head.chain ?? 0;
}

/**
 * Where the journal signing key is looked for: the given file (the edges pass
 * `journal_signing_key_file`, else IDEM_JOURNAL_SIGNING_KEY_FILE), else the data directory.
 */
export function signingKeyPaths(
  dataDir: string,
  keyFile?: string,
): { privatePath: string; publicPath: string } {
  if (!keyFile)
    return {
      privatePath: join(dataDir, JOURNAL_SIGNING_KEY_FILE),
      publicPath: join(dataDir, PUBLIC_KEY_FILE),
    };
  // `journal-signing.key` → `journal-signing.pub`; any other name gets `.pub` added.
  const publicPath = keyFile.endsWith('.key') ? `${keyFile.slice(0, -4)}.pub` : `${keyFile}.pub`;
  return { privatePath: keyFile, publicPath };
}

/**
 * The journal's Ed25519 key pair, created on first use (private key 0600,
 * PKCS#8 PEM; public key SPKI PEM beside it, to hand to auditors). By default
 * in the data directory; `keyFile` puts it elsewhere — e.g. owned by another user, so that whoever can rewrite the
 * store cannot also re-sign it.
 */
export function loadOrCreateSigningKey(
  dataDir: string,
  keyFile?: string,
): { privateKeyPem: string; publicKeyPem: string } {
  const { privatePath, publicPath } = signingKeyPaths(dataDir, keyFile);
  if (!existsSync(privatePath)) {
    if (!existsSync(dirname(privatePath)))
      throw new Error(`no directory for the signing key: ${privatePath}`);
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

/**
 * Reads heads kept off the host: a `journal-head.json` copy, or JSON lines of
 * signed heads (what `idem audit sign --json` prints, appended over time; an
 * export's `signed_head` lines). A missing or unreadable file is an error:
 * evidence that cannot be read must not count as "no heads".
 */
export function readHeadsFile(path: string): SignedHead[] {
  const text = readFileSync(path, 'utf8');
  const trimmed = text.trim();
  if (trimmed === '') return [];
  try {
    const parsed = JSON.parse(trimmed) as { heads?: SignedHead[] } | SignedHead;
    if ('heads' in parsed && Array.isArray(parsed.heads)) return parsed.heads.map(asHead);
  } catch {
    // Not one JSON document: JSON lines.
  }
  return trimmed
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      try {
        const parsed = JSON.parse(line) as { type?: string };
        return parsed.type === 'entry' ? undefined : asHead(parsed);
      } catch (error) {
        throw new Error(`${path}:${index + 1}: not a signed head (${(error as Error).message})`);
      }
    })
    .filter((head): head is SignedHead => head !== undefined);
}

function asHead(value: unknown): SignedHead {
  const v = value as Partial<SignedHead> & { type?: string };
  if (
    (v.stream !== 'activity' && v.stream !== 'sessions') ||
    typeof v.seq !== 'number' ||
    typeof v.hash !== 'string' ||
    typeof v.signedAt !== 'number' ||
    typeof v.signature !== 'string' ||
    (v.chain !== undefined && !(Number.isSafeInteger(v.chain) && v.chain >= 0))
  ) {
    throw new Error('expected {stream, chain?, seq, hash, signedAt, signature}');
  }
  return {
    stream: v.stream,
    ...(v.chain ? { chain: v.chain } : {}),
    seq: v.seq,
    hash: v.hash,
    signedAt: v.signedAt,
    signature: v.signature,
  };
}

export function writeSignedHeads(path: string, heads: SignedHead[]): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify({ heads }, null, 2)}\n`, { mode: 0o644 });
  // rename() is atomic: a reader sees the old heads or the new ones, never half a file.
  renameSync(temp, path);
}
