/**
 * A junk token must not delay a key rotation (issue 25, item 6). A token with
 * the trusted issuer and an unknown `kid` makes the gateway fetch the issuer's
 * keys again; for `jwks_cooldown` after that no fetch is made, so a genuine
 * token signed by a key published just afterwards cannot be checked. It is
 * not invalid: it gets 503 with Retry-After (the client keeps its token and
 * tries again), never 401 invalid_token (which makes a client fetch a new
 * token, of the same key, and be refused again). A real authorization server
 * on loopback rotates its keys; the gateway uses the default cooldown.
 */
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { type AuthorizationServer, startAuthorizationServer } from '../support/authorization-server.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { MCP_HEADERS, rawRequest } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

describe('an unknown key id inside the JWKS cooldown', () => {
  let as: AuthorizationServer;
  let gateway: Gateway;
  let url: string;
  const initialize = (token: string) =>
    rawRequest(url, {
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });

  beforeAll(async () => {
    as = await startAuthorizationServer([{ id: 'alice', secret: 'alice-secret', scopes: ['mcp:tools'] }]);
    gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: freshDir('rotation-gw'),
        listen: { http: { host: '127.0.0.1', port: 0 } },
        upstreams: { counter: countingUpstream(freshDir('rotation-counts')) },
        // jwks_cooldown: the default (30 s), far longer than this test takes.
        auth: { oauth: { issuers: [{ issuer: as.issuer }], algorithms: ['ES256'] } },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    ({ url } = await gateway.serveHttp());
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await as?.close();
    removeTemporaries();
  });

  it('a junk token is refused as invalid; a genuine token of a key published just after gets 503 with Retry-After, not invalid_token', async () => {
    // Anyone can make this: the trusted issuer, an audience that fits, a key id nobody published.
    const { privateKey } = await generateKeyPair('ES256');
    const now = Math.floor(Date.now() / 1000);
    const junk = await new SignJWT({ iss: as.issuer, aud: url, sub: 'mallory', exp: now + 300 })
      .setProtectedHeader({ alg: 'ES256', kid: 'made-up', typ: 'at+jwt' })
      .sign(privateKey);
    const refused = await initialize(junk);
    expect(refused.status).toBe(401);
    expect(String(refused.headers['www-authenticate'])).toContain('error="invalid_token"');

    // The issuer rotates now, inside the cooldown the junk token's fetch began.
    await as.rotateKeys({ keepOld: false });
    const genuine = await as.token('alice', { resource: url, scope: 'mcp:tools' });
    const answer = await initialize(genuine);
    expect(answer.status).toBe(503);
    expect(String(answer.headers['www-authenticate'] ?? '')).not.toContain('invalid_token');
    const retryAfter = Number(answer.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(30);
    expect(JSON.parse(answer.text).error.message).toMatch(/not rejected.*try again/i);
  });
});
