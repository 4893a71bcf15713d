/**
 * The HTTP front as an OAuth 2.1 resource server (issue 16), against a real
 * authorization server on loopback (oidc-provider, client credentials,
 * resource indicators) and a real upstream over HTTP that records what
 * reaches it. Token lifetimes are judged by the gateway's clock, which the
 * test moves; nothing sleeps.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { decodeJwt, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import {
  type AuthorizationServer,
  startAuthorizationServer,
  type TestClient,
  TOKEN_TTL_SECONDS,
} from '../support/authorization-server.js';
import { MCP_HEADERS, messagesOf, rawRequest, rawSession } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { createCountingServer, executionsOf } from './fixtures/counting-server.js';

const CLIENTS: TestClient[] = [
  { id: 'alice', secret: 'alice-secret', scopes: ['mcp:tools', 'counter:write'] },
  { id: 'bob', secret: 'bob-secret', scopes: ['mcp:tools', 'counter:write'] },
  { id: 'carol', secret: 'carol-secret', scopes: ['mcp:tools', 'counter:write'] },
];

/** The counting server over Streamable HTTP, remembering the headers and bodies of every request. */
async function recordingUpstream(dir: string) {
  const seen: { headers: IncomingHttpHeaders; body: string }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ headers: req.headers, body });
      // Stateless: a server per request (the SDK's pattern), all counting into `dir`.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const mcp = createCountingServer(dir);
      res.on('close', () => void mcp.close());
      void mcp
        .connect(transport)
        .then(() => transport.handleRequest(req, res, body ? JSON.parse(body) : undefined));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const call = (id: number, key: string, name = 'count') => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: { key } },
});

describe('OAuth 2.1 at the HTTP front', () => {
  let as: AuthorizationServer;
  let otherAs: AuthorizationServer;
  let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
  let gateway: Gateway;
  let url: string;
  let countDir: string;
  /** How far the gateway's clock is ahead of the system's: token lifetimes are judged by it. */
  let clockAheadMs = 0;
  const issued: string[] = [];
  const tokenFor = async (client: string, scope = 'mcp:tools counter:write', resource = url) => {
    const token = await as.token(client, { resource, scope });
    issued.push(token);
    return token;
  };
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const initialize = (headers: Record<string, string>) =>
    rawRequest(url, {
      headers: { ...MCP_HEADERS, ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });

  beforeAll(async () => {
    as = await startAuthorizationServer(CLIENTS);
    otherAs = await startAuthorizationServer(CLIENTS);
    countDir = freshDir('oauth-counts');
    upstream = await recordingUpstream(countDir);
    gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: freshDir('oauth-gw'),
        listen: { http: { host: '127.0.0.1', port: 0 } },
        upstreams: { counter: { url: upstream.url } },
        auth: {
          oauth: {
            issuers: [{ issuer: as.issuer }],
            algorithms: ['ES256'],
            scopes: ['mcp:tools'],
            tool_scopes: { count: ['counter:write'] },
            // Rotation is picked up on the next unknown key, not after a pause the test would wait out.
            jwks_cooldown: 0,
          },
        },
      }),
      { version: 'test', upstreamStderr: 'ignore', clock: () => Date.now() + clockAheadMs },
    );
    ({ url } = await gateway.serveHttp());
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    await as?.close();
    await otherAs?.close();
    removeTemporaries();
  });

  it('a client without a token is told where the metadata is; from it, it gets a token and calls a tool', async () => {
    const refused = await initialize({});
    expect(refused.status).toBe(401);
    const challenge = String(refused.headers['www-authenticate']);
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    expect(metadataUrl).toBe(`${new URL(url).origin}/.well-known/oauth-protected-resource/mcp`);
    expect(challenge).not.toContain('error=');
    expect(challenge).toContain('scope="mcp:tools"');

    const metadata = (await (await fetch(metadataUrl as string)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      resource: url,
      authorization_servers: [as.issuer],
      bearer_methods_supported: ['header'],
    });
    expect(metadata.scopes_supported).toEqual(['mcp:tools', 'counter:write']);
    // The root form serves the same document.
    expect(await (await fetch(`${new URL(url).origin}/.well-known/oauth-protected-resource`)).json()).toEqual(
      metadata,
    );

    const issuer = (metadata.authorization_servers as string[])[0] as string;
    const server = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
      token_endpoint: string;
    };
    const tokenResponse = await fetch(server.token_endpoint, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('alice:alice-secret').toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        resource: metadata.resource as string,
        scope: (metadata.scopes_supported as string[]).join(' '),
      }),
    });
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
    issued.push(token);
    const session = await rawSession(url, 'discovering-client', bearer(token));
    const reply = await session.call(call(1, 'discovered'));
    expect(textOf(reply.result)).toBe('discovered=1');
    expect(executionsOf(countDir, 'discovered')).toBe(1);
  });

  it('refuses expired, wrong-audience, wrong-issuer, unsigned, tampered and malformed tokens, running nothing', async () => {
    const valid = await tokenFor('alice');
    const claims = decodeJwt(valid);
    const [header, payload, signature] = valid.split('.') as [string, string, string];
    const tampered = [
      header,
      Buffer.from(JSON.stringify({ ...claims, sub: 'bob', client_id: 'bob' })).toString('base64url'),
      signature,
    ].join('.');
    const unsigned = new UnsecuredJWT({ ...claims }).encode();
    const cases: [string, string, RegExp][] = [
      [
        'wrong audience',
        await tokenFor('alice', undefined, 'http://127.0.0.1:1/another-service'),
        /audience/,
      ],
      [
        'wrong issuer',
        await otherAs.token('alice', { resource: url, scope: 'mcp:tools counter:write' }),
        /issuer/,
      ],
      ['alg none', unsigned, /algorithm/],
      ['tampered', tampered, /signature/],
      ['not a JWT', 'opaque-token-value', /not a JWT/],
      ['payload only', `${header}.${payload}.`, /signature|format/],
    ];
    for (const [what, token, why] of cases) {
      const response = await initialize(bearer(token));
      expect(response.status, what).toBe(401);
      const challenge = String(response.headers['www-authenticate']);
      expect(challenge, what).toContain('error="invalid_token"');
      expect(challenge, what).toContain('resource_metadata="');
      expect(challenge, what).toMatch(why);
      // The refusal never echoes the token.
      expect(response.text + challenge, what).not.toContain(token.slice(0, 40));
    }

    // Expiry is judged by the gateway's clock: moved past exp (and the 30 s leeway), the token is refused.
    const session = await rawSession(url, 'expiring', bearer(valid));
    expect(textOf((await session.call(call(1, 'expiry'))).result)).toBe('expiry=1');
    clockAheadMs = (TOKEN_TTL_SECONDS + 31) * 1000;
    try {
      const expired = await session.post(call(2, 'expiry'));
      expect(expired.status).toBe(401);
      expect(String(expired.headers['www-authenticate'])).toMatch(/error="invalid_token".*expired/);
    } finally {
      clockAheadMs = 0;
    }

    // A token in the query string is not looked at (bearer_methods_supported: header).
    const inQuery = await rawRequest(`${url}?access_token=${encodeURIComponent(valid)}`, {
      headers: MCP_HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
    });
    expect(inQuery.status).toBe(401);
    expect(String(inQuery.headers['www-authenticate'])).not.toContain('error=');
    expect(executionsOf(countDir, 'expiry')).toBe(1);
  });

  it('a GET stream ends when its token expires (by the gateway clock); the session lives on for a fresh token', async () => {
    const first = await tokenFor('alice');
    const session = await rawSession(url, 'listening', bearer(first));
    // The gateway's clock put 1.5 s before the token stops being accepted (exp + the 30 s leeway).
    const acceptedUntilMs = ((decodeJwt(first).exp as number) + 30) * 1000;
    clockAheadMs = acceptedUntilMs - 1_500 - Date.now();
    try {
      const stream = await rawRequest(url, {
        method: 'GET',
        headers: { ...session.headers, accept: 'text/event-stream' },
        // Idle for this long (no end) rejects: without the expiry, the stream would stay open.
        timeoutMs: 20_000,
      });
      expect(stream.status).toBe(200);
    } finally {
      clockAheadMs = 0;
    }
    // The same subject's next token carries on in the same session.
    const renewed = await session.post(call(1, 'after-stream'), bearer(await tokenFor('alice')));
    expect(renewed.status).toBe(200);
    expect(textOf(messagesOf(renewed).find((m) => m.id === 1)?.result)).toBe('after-stream=1');
  });

  it('a token without a tool’s scope gets 403 insufficient_scope naming it; one without the base scope is refused at once', async () => {
    const readOnly = await tokenFor('carol', 'mcp:tools');
    const session = await rawSession(url, 'carol', bearer(readOnly));
    const list = await session.call({ id: 1, method: 'tools/list' });
    expect((list.result as { tools: unknown[] }).tools.length).toBeGreaterThan(0);
    const refused = await session.post(call(2, 'scoped'));
    expect(refused.status).toBe(403);
    const challenge = String(refused.headers['www-authenticate']);
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="mcp:tools counter:write"');
    expect(messagesOf(refused)[0]).toMatchObject({
      error: { message: expect.stringMatching(/counter:write/) },
    });
    // A read-only tool needs no more than the base scope.
    const read = await session.call(call(3, 'scoped', 'read_count'));
    expect(textOf(read.result)).toBe('scoped=0');
    expect(executionsOf(countDir, 'scoped')).toBe(0);

    const noBase = await initialize(bearer(await tokenFor('carol', 'counter:write')));
    expect(noBase.status).toBe(403);
    expect(String(noBase.headers['www-authenticate'])).toMatch(
      /error="insufficient_scope".*scope="mcp:tools"/,
    );
  });

  it('a deliberate repeat through the status tool needs the repeated tool’s scope too', async () => {
    const full = await rawSession(url, 'repeater', bearer(await tokenFor('alice')));
    const first = await full.call(call(1, 'repeat-me'));
    const ref = (first.result as CallToolResult)._meta?.['io.idem/execution-id'] as string;
    expect(ref).toMatch(/^exe_/);
    // Same subject, a token without counter:write: the status tool is allowed, the repeat is not.
    const narrow = await rawSession(url, 'repeater', bearer(await tokenFor('alice', 'mcp:tools')));
    const status = { jsonrpc: '2.0', method: 'tools/call' } as const;
    const refused = await narrow.call({
      ...status,
      id: 2,
      params: { name: 'idem_execution_status', arguments: { ref, action: 'repeat' } },
    });
    expect((refused.result as CallToolResult).structuredContent).toMatchObject({
      idem: { code: 'IDEM_INSUFFICIENT_SCOPE' },
    });
    expect(textOf(refused.result)).toContain('counter:write');
    const repeated = await full.call({
      ...status,
      id: 3,
      params: { name: 'idem_execution_status', arguments: { ref, action: 'repeat' } },
    });
    expect(textOf(repeated.result)).toBe('repeat-me=2');
    expect(executionsOf(countDir, 'repeat-me')).toBe(2);
  });

  it('two subjects’ identical calls are two executions; one subject’s retry with a new token attaches to its own', async () => {
    const alice1 = await tokenFor('alice');
    const bob = await tokenFor('bob');
    const [a, b] = await Promise.all([
      rawSession(url, 'same-client', bearer(alice1)),
      rawSession(url, 'same-client', bearer(bob)),
    ]);
    const [ra, rb] = await Promise.all([a.call(call(1, 'shared-key')), b.call(call(1, 'shared-key'))]);
    expect([textOf(ra.result), textOf(rb.result)].sort()).toEqual(['shared-key=1', 'shared-key=2']);
    expect(executionsOf(countDir, 'shared-key')).toBe(2);

    // Bob cannot use Alice's session, even with a valid token.
    const stolen = await rawRequest(url, {
      headers: { ...a.headers, ...bearer(bob) },
      body: JSON.stringify(call(2, 'shared-key')),
    });
    expect(stolen.status).toBe(404);

    // Alice's token is replaced (a refresh): same subject, new jti. Her retry in a new session attaches.
    const alice2 = await tokenFor('alice');
    expect(decodeJwt(alice2).jti).not.toBe(decodeJwt(alice1).jti);
    const again = await rawSession(url, 'same-client', bearer(alice2));
    const retried = await again.call(call(7, 'shared-key'));
    expect(textOf(retried.result)).toBe(textOf(ra.result));
    expect((retried.result as CallToolResult)._meta?.['io.idem/replayed']).toBe(true);
    // And her old session goes on with the new token.
    const sameSession = await a.post(call(3, 'shared-key'), bearer(alice2));
    expect(sameSession.status).toBe(200);
    expect(executionsOf(countDir, 'shared-key')).toBe(2);

    const executions = (await gateway.store.list()).filter((e) => e.tool === 'count');
    const mine = executions.filter((e) => e.actor === 'token:alice');
    expect(executions.some((e) => e.actor === 'token:bob')).toBe(true);
    const journal = await gateway.store.journalFor(
      (mine.find((e) => e.argumentsPreview.includes('shared-key')) ?? mine[0])!.id,
    );
    const received = journal.find((e) => e.kind === 'received');
    expect(received?.actor).toBe('token:alice');
    expect(received?.detail.token).toEqual({ issuer: as.issuer, jti: decodeJwt(alice1).jti });
    const attached = journal
      .filter((e) => e.kind === 'attached')
      .map((e) => (e.detail.token as { jti: string }).jti);
    expect(attached).toContain(decodeJwt(alice2).jti);
  });

  it('picks up a key rotation at the issuer, and refuses tokens of a key it no longer publishes', async () => {
    const before = await tokenFor('alice');
    expect((await initialize(bearer(before))).status).toBe(200);
    const oldKey = as.currentKey();
    const fresh = await as.rotateKeys({ keepOld: false });
    const after = await tokenFor('alice');
    expect(JSON.parse(Buffer.from(after.split('.')[0] as string, 'base64url').toString()).kid).toBe(
      fresh.kid,
    );
    // An unknown key id makes the gateway fetch the issuer's keys again.
    const rotated = await rawSession(url, 'rotated', bearer(after));
    expect(textOf((await rotated.call(call(1, 'rotation'))).result)).toBe('rotation=1');
    // The old key is gone from the issuer's key set: its tokens are refused, real or forged.
    const revoked = await initialize(bearer(before));
    expect(revoked.status).toBe(401);
    expect(String(revoked.headers['www-authenticate'])).toMatch(/does not publish/);
    const forged = await new SignJWT({ ...decodeJwt(after) })
      .setProtectedHeader({ alg: 'ES256', kid: oldKey.kid, typ: 'at+jwt' })
      .sign(oldKey.privateKey);
    expect((await initialize(bearer(forged))).status).toBe(401);
  });

  it('the official SDK client with its client-credentials provider connects through the gateway end to end', async () => {
    const tokensBefore = as.tokenRequests;
    const client = new Client({ name: 'sdk-oauth-client', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      authProvider: new ClientCredentialsProvider({
        clientId: 'bob',
        clientSecret: 'bob-secret',
        expectedIssuer: as.issuer,
        scope: 'mcp:tools counter:write',
      }),
    });
    await client.connect(transport);
    const result = (await client.callTool({ name: 'count', arguments: { key: 'sdk' } })) as CallToolResult;
    expect(textOf(result)).toBe('sdk=1');
    expect(as.tokenRequests).toBeGreaterThan(tokensBefore);
    const token = (
      transport as unknown as { _authProvider: ClientCredentialsProvider }
    )._authProvider.tokens()?.access_token as string;
    expect(decodeJwt(token)).toMatchObject({ sub: 'bob', aud: url });
    issued.push(token);
    await client.close();
  });

  it('stateless (no sessions): each request is checked on its own, and actors stay apart', async () => {
    const stateless = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: freshDir('oauth-stateless'),
        listen: { http: { host: '127.0.0.1', port: 0, stateless: true } },
        upstreams: { counter: { url: upstream.url } },
        auth: { oauth: { issuers: [{ issuer: as.issuer }], algorithms: ['ES256'], scopes: ['mcp:tools'] } },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    try {
      const { url: statelessUrl } = await stateless.serveHttp();
      const post = async (token: string | undefined, id: number) =>
        rawRequest(statelessUrl, {
          headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2025-11-25', ...(token ? bearer(token) : {}) },
          body: JSON.stringify(call(id, 'stateless')),
        });
      expect((await post(undefined, 1)).status).toBe(401);
      const alice = await as.token('alice', { resource: statelessUrl, scope: 'mcp:tools' });
      const bob = await as.token('bob', { resource: statelessUrl, scope: 'mcp:tools' });
      issued.push(alice, bob);
      // A token for the other gateway (another resource) is refused here.
      expect((await post(await tokenFor('alice'), 1)).status).toBe(401);
      const first = messagesOf(await post(alice, 1))[0]?.result;
      const again = messagesOf(await post(alice, 2))[0]?.result;
      const other = messagesOf(await post(bob, 1))[0]?.result;
      expect([textOf(first), textOf(again), textOf(other)]).toEqual([
        'stateless=1',
        'stateless=1',
        'stateless=2',
      ]);
      expect(executionsOf(countDir, 'stateless')).toBe(2);
    } finally {
      await stateless.close();
    }
  });

  it("beyond loopback, OAuth needs the resource named: the front's own address is not what clients reach", async () => {
    const exposed = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: freshDir('oauth-exposed'),
        store: { kind: 'memory' },
        listen: { http: { host: '0.0.0.0', port: 0 } },
        upstreams: { counter: { url: upstream.url } },
        auth: { oauth: { issuers: [{ issuer: as.issuer }] } },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    try {
      await expect(exposed.serveHttp()).rejects.toThrow(
        /auth.oauth.resource is required when listening on 0.0.0.0/,
      );
    } finally {
      await exposed.close();
    }
  });

  it('no token reaches the upstream, the journal or the store', async () => {
    expect(upstream.seen.length).toBeGreaterThan(0);
    const upstreamText = JSON.stringify(upstream.seen);
    const stored = JSON.stringify([
      await gateway.store.readJournal(0, 100_000, 'activity'),
      await gateway.store.readJournal(0, 100_000, 'sessions'),
      await gateway.store.list(),
    ]);
    for (const token of issued) {
      // The signature part alone is what makes a token usable.
      const signature = token.split('.')[2] as string;
      expect(upstreamText).not.toContain(signature);
      expect(stored).not.toContain(signature);
    }
    expect(upstream.seen.every((r) => r.headers.authorization === undefined)).toBe(true);
  });
});
