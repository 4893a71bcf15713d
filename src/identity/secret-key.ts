import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Reads a per-installation secret from `dir/name`, creating it on first use.
 *
 * Two processes may start at once on one data directory; both must end up with
 * the same key. The key is written to a private temporary file and then
 * hard-linked into place: link() fails if the name exists, so exactly one
 * writer wins and nobody ever reads a half-written key.
 */
export function loadOrCreateSecret(dir: string, name: string, bytes = 32): Buffer {
  const path = join(dir, name);
  try {
    return readKey(path, bytes);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const temp = join(dir, `.${name}.${process.pid}.${randomBytes(6).toString('hex')}`);
  writeFileSync(temp, randomBytes(bytes), { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(temp);
  }
  chmodSync(path, 0o600);
  return readKey(path, bytes);
}

function readKey(path: string, bytes: number): Buffer {
  const key = readFileSync(path);
  if (key.length !== bytes) {
    throw new Error(`${path} holds ${key.length} bytes, expected ${bytes}: refusing to use a damaged key`);
  }
  return key;
}
