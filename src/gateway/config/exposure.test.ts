import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLoopbackHost, unauthenticatedExposure } from './exposure.js';

describe('what serving HTTP without auth exposes', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.5.6.7', true],
    ['::1', true],
    ['[::1]', true],
    ['::ffff:127.0.0.1', true],
    ['localhost', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['::ffff:10.0.0.5', false],
    ['gateway.internal', false],
  ])('%s is loopback: %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });

  it('refuses a non-loopback address unless allowed; warns otherwise', () => {
    expect(unauthenticatedExposure({ host: '0.0.0.0', stateless: false, allowed: false })).toMatchObject({
      refuse: true,
      message: expect.stringMatching(/allow_unauthenticated/),
    });
    expect(unauthenticatedExposure({ host: '0.0.0.0', stateless: false, allowed: true })).toMatchObject({
      refuse: false,
      message: expect.stringMatching(/^the HTTP front on 0.0.0.0 has no auth/),
    });
    expect(unauthenticatedExposure({ host: '127.0.0.1', stateless: true, allowed: false }).message).toMatch(
      /EVERY client one and the same actor/,
    );
  });
});

describe('where the exposure messages send the reader', () => {
  it('names docs/security.md by its path on this machine, a file that exists (the package ships docs/)', () => {
    for (const allowed of [false, true]) {
      const { message } = unauthenticatedExposure({ host: '192.0.2.1', stateless: false, allowed });
      const doc = /See (\S+)\.$/.exec(message)?.[1] ?? '';
      expect(isAbsolute(doc), message).toBe(true);
      expect(doc.endsWith('/docs/security.md')).toBe(true);
      expect(existsSync(doc)).toBe(true);
    }
  });
});
