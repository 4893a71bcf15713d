import { randomBytes, randomUUID } from 'node:crypto';
import { monotonicFactory } from 'ulid';

/** Execution ids (`exe_` + a ULID, monotonic within one engine) and claim tokens. */
export function executionIds(): () => string {
  const newId = monotonicFactory(pooledRandom);
  return () => `exe_${newId()}`;
}

/** A claim token: unguessable, and cheap (randomUUID draws from a cached entropy pool). */
export function newToken(): string {
  return randomUUID();
}

/**
 * ULID randomness from a pooled buffer: the library's default draws a fresh
 * crypto.randomBytes(1) per character, which dominated the cost of an id.
 */
const pool = { bytes: Buffer.alloc(0), offset: 0 };
function pooledRandom(): number {
  if (pool.offset >= pool.bytes.length) {
    pool.bytes = randomBytes(4096);
    pool.offset = 0;
  }
  return (pool.bytes[pool.offset++] as number) / 256;
}
