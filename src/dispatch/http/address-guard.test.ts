import { describe, expect, it } from 'vitest';
import { checkUrl, refusedRange } from './address-guard.js';
import { statusOutcome } from './outcome.js';
import { buildBody, buildHeaders, buildUrl } from './template.js';

describe('refusedRange', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['fd00:ec2::254', 'unique-local (cloud metadata)'],
    ['fe80::1', 'link-local'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['0.0.0.0', '"this network"'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['192.0.2.1', 'documentation'],
    // A URL spells [::ffff:127.0.0.1] this way: mapped addresses are judged as IPv4 in either spelling.
    ['::ffff:7f00:1', 'loopback'],
    ['::FFFF:A9FE:A9FE', 'link-local (cloud metadata)'],
    ['0:0:0:0:0:ffff:0a00:0001', 'private'],
    // IPv6 forms whose IPv4 host a translator or tunnel decides are refused whole, public or not.
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['::808:808', 'IPv4-compatible (deprecated)'],
    ['::ffff:0:7f00:1', 'IPv4-translated'],
    ['64:ff9b::a9fe:a9fe', 'NAT64'],
    ['64:ff9b:1::a9fe:a9fe', 'NAT64'],
    ['2002:7f00:1::1', '6to4'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['2001:db8::1', 'documentation'],
  ])('%s is %s', (address, label) => {
    expect(refusedRange(address)).toBe(label);
  });

  it.each([
    '93.184.215.14',
    '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
    '2001:4860:4860::8888',
    '172.32.0.1',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
  ])('%s is public', (address) => {
    expect(refusedRange(address)).toBeUndefined();
  });
});

describe('checkUrl', () => {
  const allowed = { schemes: ['https'], hosts: ['api.example.com', '::1'], ports: [443], addresses: [] };
  it('refuses another scheme, host, port, or user-info, naming what is wrong', () => {
    expect(() => checkUrl(new URL('http://api.example.com/'), allowed)).toThrow('scheme http');
    expect(() => checkUrl(new URL('https://api.example.org/'), allowed)).toThrow('host api.example.org');
    expect(() => checkUrl(new URL('https://api.example.com:8443/'), allowed)).toThrow('port 8443');
    expect(() => checkUrl(new URL('https://u:p@api.example.com/'), allowed)).toThrow('user-info');
    expect(() => checkUrl(new URL('https://API.example.com/x'), allowed)).not.toThrow();
    expect(() => checkUrl(new URL('https://[0:0:0:0:0:0:0:1]/x'), allowed)).not.toThrow();
  });
});

describe('statusOutcome', () => {
  it('by default: 2xx completed, 4xx failed, 3xx and 5xx unknown', () => {
    expect([200, 201, 204, 302, 400, 404, 409, 500, 503].map((s) => statusOutcome(s, undefined))).toEqual([
      'completed',
      'completed',
      'completed',
      'unknown',
      'failed',
      'failed',
      'failed',
      'unknown',
      'unknown',
    ]);
  });
  it('follows configured lists in the order completed, failed, unknown', () => {
    const rules = { completed: ['2xx', 409], failed: ['400-428', 501], unknown: ['429'] };
    expect([409, 429, 404, 501, 502].map((s) => statusOutcome(s, rules))).toEqual([
      'completed',
      'unknown',
      'failed',
      'failed',
      'unknown',
    ]);
  });
});

describe('templates', () => {
  it('percent-encodes every value, so a host value cannot smuggle a port, path or user-info', () => {
    expect(() => buildUrl('http://{h}/x', { h: '127.0.0.1:22' })).toThrow('not a valid URL');
    expect(() => buildUrl('http://{h}/x', { h: 'evil.com#' })).toThrow('not a valid URL');
    expect(() => buildUrl('http://{h}/x', { h: 'u@evil.com' })).toThrow('not a valid URL');
    expect(buildUrl('http://h/{p}?q={q}', { p: 'a/../b', q: 'x&y=1' }).href).toBe(
      'http://h/a%2F..%2Fb?q=x%26y%3D1',
    );
    // A dot segment is removed by the URL parser, with the segment before it: refused, not encoded.
    expect(() => buildUrl('http://h/v1/{p}/refunds', { p: '..' })).toThrow('"." or ".." path segment');
    expect(() => buildUrl('http://h/v1/{p}', { p: '.' })).toThrow('"." or ".." path segment');
    expect(() => buildUrl('http://h/v1/{a}{b}/x', { a: '.', b: '.' })).toThrow('"." or ".." path segment');
    expect(buildUrl('http://h/v1/{p}/refunds', { p: '%2e%2e' }).pathname).toBe('/v1/%252e%252e/refunds');
    expect(buildUrl('http://h/v1/{p}.json?up={q}#{q}', { p: '..', q: '..' }).href).toBe(
      'http://h/v1/...json?up=..#..',
    );
    expect(() => buildUrl('http://h/{missing}', {})).toThrow('the URL needs argument "missing"');
    expect(() => buildUrl('http://h/{o}', { o: { a: 1 } })).toThrow('must be a string, number or boolean');
  });
  it('refuses a header value HTTP cannot carry, naming the header; Latin-1 and tabs pass', () => {
    const headers = { 'X-Note': 'note: {n}' };
    expect(buildHeaders(headers, { n: 'café\tdone' })).toEqual({ 'X-Note': 'note: café\tdone' });
    for (const n of ['line\r\nX-Admin: 1', 'nul\0', 'del\x7f', 'ctl\x01', '日本'])
      expect(() => buildHeaders(headers, { n }), JSON.stringify(n)).toThrow(/header X-Note cannot carry/);
  });

  it('keeps a whole placeholder typed, leaves an absent one out, and interpolates text', () => {
    expect(
      buildBody(
        { n: '{n}', o: '{o.k}', absent: '{nope}', t: 'order {id}', list: ['{n}'] },
        {
          n: 5,
          o: { k: [1] },
          id: 'A-1',
        },
      ),
    ).toEqual({ n: 5, o: [1], t: 'order A-1', list: [5] });
  });
});
