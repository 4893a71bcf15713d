import { describe, expect, it } from 'vitest';
import { checkedHost, hostKeyFingerprint } from './host.js';

describe('SSH inventory entries', () => {
  it('host key fingerprint: known answer from ssh-keygen -l -E sha256', () => {
    const blob = Buffer.from(
      'AAAAC3NzaC1lZDI1NTE5AAAAIDmq18T2kEaxHChb/V7qpIw0zhfkTtzVE+pSbET6WsRg',
      'base64',
    );
    expect(hostKeyFingerprint(blob)).toBe('SHA256:NBB4LaXEjota1loLFjF86HOcgJfgWlUDI/iPX8dHGwU');
  });

  const entry = {
    name: 'web-1',
    host: '127.0.0.1',
    user: 'deploy',
    credential: 'deploy-key',
    hostKey: 'SHA256:NBB4LaXEjota1loLFjF86HOcgJfgWlUDI/iPX8dHGwU',
  };

  it('fills in port 22 and the marker directory under the home directory', () => {
    expect(checkedHost(entry)).toMatchObject({ port: 22, markerDir: '.idem/markers' });
  });

  it('refuses a fingerprint in another form (MD5, padded, bare base64) with how to get the right one', () => {
    for (const hostKey of [
      'MD5:9f:2a:…',
      'NBB4LaXEjota1loLFjF86HOcgJfgWlUDI/iPX8dHGwU',
      'SHA256:NBB4LaXEjota1loLFjF86HOcgJfgWlUDI/iPX8dHGwU=',
    ]) {
      expect(() => checkedHost({ ...entry, hostKey })).toThrow(/ssh-keygen -l/);
    }
    expect(() => checkedHost({ ...entry, port: 70000 })).toThrow(/port/);
    expect(() => checkedHost({ ...entry, markerDir: 'a\nb' })).toThrow(/markerDir/);
  });
});
