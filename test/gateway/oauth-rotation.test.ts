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
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { type AuthorizationServer, startAuthorizationServer } from '../support/authorization-server.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { MCP_HEADERS, rawRequest } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';

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

/**
 * Issue 44, item 7: a key the issuer withdrew is not a key not yet fetchable.
 * Once a fetch of the issuer's keys no longer names a key id an earlier fetch
 * did, a token signed with it can never be accepted again: 401 invalid_token
 * with WWW-Authenticate at once, even inside the cooldown, so that the
 * official SDK client re-authorises and its call goes through (it used to get
 * 503, throw, and only re-authorise after the cooldown).
 */
describe('a token of a key the issuer withdrew, inside the JWKS cooldown', () => {
  let as: AuthorizationServer;
  let gateway: Gateway;
  let url: string;

  beforeAll(async () => {
    const counts = freshDir('withdrawn-counts');
    as = await startAuthorizationServer([{ id: 'bob', secret: 'bob-secret', scopes: ['mcp:tools'] }]);
    gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: freshDir('withdrawn-gw'),
        listen: { http: { host: '127.0.0.1', port: 0 } },
        upstreams: { counter: countingUpstream(counts) },
        // Short enough to wait out once (the first fetch's), long enough to be inside for the rest.
        auth: { oauth: { issuers: [{ issuer: as.issuer }], algorithms: ['ES256'], jwks_cooldown: '3s' } },
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

  it('is refused 401 invalid_token at once, and the SDK client re-authorises and is served', async () => {
    const provider = new ClientCredentialsProvider({
      clientId: 'bob',
      clientSecret: 'bob-secret',
      expectedIssuer: as.issuer,
      scope: 'mcp:tools',
    });
    const client = new Client({ name: 'rotating-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
    try {
      const first = (await client.callTool({
        name: 'count',
        arguments: { key: 'before' },
      })) as CallToolResult;
      expect(textOf(first)).toBe('before=1');
      const old = provider.tokens()?.access_token as string;
      expect(decodeProtectedHeader(old).kid).toBe('key-1');

      // The issuer rotates; a token of the new key makes the gateway fetch the keys once the first
      // fetch's cooldown is over (503 until then), and a new cooldown starts.
      await as.rotateKeys({ keepOld: false });
      const fresh = await as.token('bob', { resource: url, scope: 'mcp:tools' });
      await vi.waitFor(async () => expect((await initializeWith(url, fresh)).status).toBe(200), PATIENTLY);

      // Inside the cooldown, the withdrawn key's token: invalid, said so, not "try again later".
      const refused = await initializeWith(url, old);
      expect(refused.status).toBe(401);
      expect(String(refused.headers['www-authenticate'])).toMatch(
        /error="invalid_token".*no longer publishes/,
      );
      expect(refused.headers['retry-after']).toBeUndefined();

      // The SDK client's next call meets the same 401 and fetches a new token by itself.
      const tokensBefore = as.tokenRequests;
      const second = (await client.callTool({
        name: 'count',
        arguments: { key: 'after' },
      })) as CallToolResult;
      expect(textOf(second)).toBe('after=1');
      expect(as.tokenRequests).toBe(tokensBefore + 1);
      expect(decodeProtectedHeader(provider.tokens()?.access_token as string).kid).toBe('key-2');
    } finally {
      await client.close();
    }
  });
});

function initializeWith(url: string, token: string) {
  return rawRequest(url, {
    headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
}
