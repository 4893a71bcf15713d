import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory/memory-store.js';
import {
  FIRST_LOCK_MS,
  FORGET_AFTER_MS,
  FREE_FAILURES,
  LoginThrottle,
  loginKeys,
  MAX_LOCK_MS,
  MAX_TRACKED_KEYS,
} from './login-throttle.js';
import { type RunningConsole, startConsole } from './server.js';

describe('the login throttle, on a clock the test moves', () => {
  it('five failures are free; then each locks twice as long, up to 15 minutes; a success clears', () => {
    let now = 0;
    const throttle = new LoginThrottle(() => now);
    const keys = loginKeys('127.0.0.1', 'operator:alice');
    for (let i = 1; i < FREE_FAILURES; i++) {
      throttle.failed(keys);
      expect(throttle.retryAfterMs(keys)).toBe(0);
    }
    const locks: number[] = [];
    for (let i = 0; i < 12; i++) {
      throttle.failed(keys);
      const wait = throttle.retryAfterMs(keys);
      locks.push(wait);
      now += wait;
      expect(throttle.retryAfterMs(keys)).toBe(0);
    }
    expect(locks.slice(0, 4)).toEqual([
      FIRST_LOCK_MS,
      2 * FIRST_LOCK_MS,
      4 * FIRST_LOCK_MS,
      8 * FIRST_LOCK_MS,
    ]);
    expect(Math.max(...locks)).toBe(MAX_LOCK_MS);
    throttle.succeeded(keys);
    throttle.failed(keys);
    expect(throttle.retryAfterMs(keys)).toBe(0);
  });

  it('per address and per name: another name from a locked address, or a locked name from elsewhere, waits', () => {
    let now = 0;
    const throttle = new LoginThrottle(() => now);
    for (let i = 0; i < FREE_FAILURES; i++) throttle.failed(loginKeys('10.0.0.1', `operator:n${i}`));
    expect(throttle.retryAfterMs(loginKeys('10.0.0.1', 'operator:bob'))).toBe(FIRST_LOCK_MS);
    expect(throttle.retryAfterMs(loginKeys('10.0.0.2', 'operator:bob'))).toBe(0);
    for (let i = 0; i < FREE_FAILURES; i++) throttle.failed(loginKeys(`10.1.0.${i}`, 'operator:Carol'));
    expect(throttle.retryAfterMs(loginKeys('10.2.0.1', 'operator:carol'))).toBe(FIRST_LOCK_MS);
    // Quiet for long enough after the lock: forgotten, and the count starts again.
    now += FIRST_LOCK_MS + FORGET_AFTER_MS;
    throttle.failed(loginKeys('10.2.0.1', 'operator:carol'));
    expect(throttle.retryAfterMs(loginKeys('10.2.0.1', 'operator:carol'))).toBe(0);
  });

  it('a flood of names cannot grow it past its bound', () => {
    const throttle = new LoginThrottle(() => 0);
    for (let i = 0; i < MAX_TRACKED_KEYS + 50; i++) throttle.failed([`name:operator:n${i}`]);
    expect(throttle.size).toBe(MAX_TRACKED_KEYS);
  });
});

describe('the console login over HTTP', () => {
  const TOKEN = 'throttle-test-token-0123456789abcdef';
  let now = Date.UTC(2026, 0, 1);
  let running: RunningConsole;
  let port = 0;
  const store = new MemoryStore();

  beforeAll(async () => {
    running = await startConsole({
      store,
      token: TOKEN,
      port: 0,
      clock: () => now,
      verifyJournal: async () => {
        throw new Error('not used here');
      },
    });
    port = Number(new URL(running.url).port);
  });
  afterAll(async () => {
    await running?.close();
    await store.close();
  });

  /** POST /login from a loopback source address (127.0.0.0/8 is all this machine). */
  const login = (operator: string, token: string, from = '127.0.0.1') =>
    new Promise<{ status: number; retryAfter: string | undefined; body: string }>((resolve, reject) => {
      const body = new URLSearchParams({ operator, token }).toString();
      const req = request(
        {
          host: '127.0.0.1',
          port,
          localAddress: from,
          method: 'POST',
          path: '/login',
          headers: { 'content-type': 'application/x-www-form-urlencoded', host: `127.0.0.1:${port}` },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => {
            text += chunk.toString();
          });
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body: text }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  it('after five wrong tokens, 429 with Retry-After — the right token too — until the lock ends', async () => {
    for (let i = 0; i < FREE_FAILURES; i++)
      expect((await login('mallory', 'wrong-token-but-long-enough')).status).toBe(401);
    const locked = await login('alice', TOKEN);
    expect(locked.status).toBe(429);
    expect(locked.retryAfter).toBe('1');
    expect(locked.body).toContain('try again in 1 s');
    // The same name from another address is not locked; this address is.
    expect((await login('alice', TOKEN, '127.0.0.2')).status).toBe(303);
    now += FIRST_LOCK_MS;
    expect((await login('alice', TOKEN)).status).toBe(303);
  });

  it('a name that keeps failing is locked from every address', async () => {
    for (let i = 0; i < FREE_FAILURES; i++)
      expect((await login('bob', 'wrong-token-but-long-enough', `127.0.1.${i + 1}`)).status).toBe(401);
    const locked = await login('Bob', TOKEN, '127.0.2.1');
    expect(locked.status).toBe(429);
    expect(locked.retryAfter).toBe('1');
  });

  it('wrong bearer tokens at /metrics are throttled per address too', async () => {
    const metrics = (token: string) =>
      fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    for (let i = 0; i < FREE_FAILURES; i++) expect((await metrics('wrong-token')).status).toBe(401);
    const locked = await metrics(TOKEN);
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('1');
    now += FIRST_LOCK_MS;
    // The right token, once unlocked: this console has no registry of its own.
    expect((await metrics(TOKEN)).status).toBe(404);
  });
});
