import { chmodSync, chownSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freshDir } from '../../test/support/temp-dirs.js';
import { CredentialError } from '../errors.js';
import { KnownSecrets } from '../identity/redaction.js';
import { Credentials } from './index.js';

const dir = freshDir('cred');
function secretFile(name: string, content: string, mode: number): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  chmodSync(path, mode);
  return path;
}

describe('Credentials', () => {
  it('resolves an environment variable at call time and registers its value for redaction', async () => {
    const env: NodeJS.ProcessEnv = {};
    const secrets = new KnownSecrets();
    const credentials = Credentials.fromConfig({ api: { env: 'API_KEY' } }, secrets, { env });
    await expect(credentials.resolve('api')).rejects.toThrow(
      'credential "api" cannot be resolved: environment variable API_KEY is not set',
    );
    env.API_KEY = 'key-123456789';
    expect(await credentials.resolve('api')).toEqual({ name: 'api', value: 'key-123456789' });
    expect(secrets.redact({ text: 'echo key-123456789 and key-123456789' })).toEqual({
      text: 'echo [secret] and [secret]',
    });
  });

  it('registers every value it can read at start (registerAll), and says which it cannot, never a value', async () => {
    const path = secretFile('at-start', 'file-secret-at-start\n', 0o600);
    const secrets = new KnownSecrets();
    const credentials = Credentials.fromConfig(
      { f: { file: path }, e: { env: 'SET_KEY' }, gone: { env: 'UNSET_KEY' }, short: { env: 'SHORT' } },
      secrets,
      { env: { SET_KEY: 'env-secret-at-start', SHORT: 'abc' } },
    );
    const problems = await credentials.registerAll();
    expect(problems).toEqual([
      'credential "gone" cannot be resolved: environment variable UNSET_KEY is not set',
      expect.stringContaining('credential "short" (environment variable SHORT): a secret shorter than 6'),
    ]);
    expect(problems.join()).not.toContain('abc');
    expect(secrets.redact('file-secret-at-start env-secret-at-start')).toBe('[secret] [secret]');
  });

  it('reads a 0600 file (one trailing newline dropped)', async () => {
    const path = secretFile('ok', 'file-secret-value\n', 0o600);
    const credentials = Credentials.fromConfig({ f: { file: path } }, new KnownSecrets());
    expect((await credentials.resolve('f')).value).toBe('file-secret-value');
  });

  it('refuses at start a file others can read, naming the credential, the file and the fix', () => {
    const path = secretFile('loose', 'file-secret-value', 0o644);
    expect(() => Credentials.fromConfig({ f: { file: path } }, new KnownSecrets())).toThrow(
      `credentials.f: file ${path} is readable or writable by others (mode 644); chmod 600 it`,
    );
  });

  it('refuses at start a missing file, and at call time one that became loose since', async () => {
    expect(() => Credentials.fromConfig({ f: { file: join(dir, 'absent') } }, new KnownSecrets())).toThrow(
      CredentialError,
    );
    const path = secretFile('later', 'file-secret-value', 0o600);
    const credentials = Credentials.fromConfig({ f: { file: path } }, new KnownSecrets());
    chmodSync(path, 0o640);
    await expect(credentials.resolve('f')).rejects.toThrow('chmod 600 it');
  });

  it.runIf(process.getuid?.() === 0)('refuses a file owned by another user', () => {
    const path = secretFile('theirs', 'file-secret-value', 0o600);
    chownSync(path, 65534, 65534);
    expect(() => Credentials.fromConfig({ f: { file: path } }, new KnownSecrets())).toThrow(
      'is owned by uid 65534',
    );
  });

  it('refuses a value too short to be scrubbed, and a name never declared', async () => {
    const credentials = Credentials.fromConfig({ short: { env: 'S' } }, new KnownSecrets(), {
      env: { S: 'abc' },
    });
    await expect(credentials.resolve('short')).rejects.toThrow('shorter than 6 characters');
    await expect(credentials.resolve('other')).rejects.toThrow('credential "other" is not declared');
  });
});
