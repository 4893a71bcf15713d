import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadOperatorToken, OperatorAuth, operatorName, SESSION_TTL_MS } from './auth.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-console-auth-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the operator token', () => {
  it('from a 0600 file; a file others can read is refused, as a credential file is', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'a-long-enough-operator-token\n');
    chmodSync(file, 0o600);
    await expect(loadOperatorToken({ file })).resolves.toBe('a-long-enough-operator-token');
    chmodSync(file, 0o644);
    await expect(loadOperatorToken({ file })).rejects.toThrow(/readable or writable by others.*chmod 600/);
  });

  it('from the environment; none, or a short one, stops the start with what to do', async () => {
    await expect(loadOperatorToken({ env: 'IDEM_TEST_NO_SUCH_TOKEN' })).rejects.toThrow(
      /set IDEM_TEST_NO_SUCH_TOKEN/,
    );
    process.env.IDEM_TEST_SHORT_TOKEN = 'short';
    await expect(loadOperatorToken({ env: 'IDEM_TEST_SHORT_TOKEN' })).rejects.toThrow(/shorter than 16/);
    delete process.env.IDEM_TEST_SHORT_TOKEN;
  });
});

describe('sessions', () => {
  it('a session carries its operator and CSRF token, and ends after its time or at logout', () => {
    let now = 0;
    const auth = new OperatorAuth('a-long-enough-operator-token', () => now);
    expect(auth.tokenMatches('a-long-enough-operator-token')).toBe(true);
    expect(auth.tokenMatches('a-long-enough-operator-tokeN')).toBe(false);
    expect(auth.tokenMatches(undefined)).toBe(false);
    const id = auth.open('operator:alice');
    const session = auth.session(id);
    expect(session?.operator).toBe('operator:alice');
    expect(auth.csrfMatches(session as NonNullable<typeof session>, session?.csrf)).toBe(true);
    expect(auth.csrfMatches(session as NonNullable<typeof session>, 'forged')).toBe(false);
    expect(auth.csrfMatches(session as NonNullable<typeof session>, undefined)).toBe(false);
    now = SESSION_TTL_MS;
    expect(auth.session(id)).toBeUndefined();
    const again = auth.open('operator:alice');
    auth.close(again);
    expect(auth.session(again)).toBeUndefined();
    expect(auth.session('made-up')).toBeUndefined();
  });

  it('operator names: plain, journal-safe', () => {
    expect(operatorName(' alice ')).toBe('operator:alice');
    expect(operatorName('alice@example.com')).toBe('operator:alice@example.com');
    expect(operatorName('')).toBeUndefined();
    expect(operatorName('<script>')).toBeUndefined();
    expect(operatorName(['alice'])).toBeUndefined();
  });
});
