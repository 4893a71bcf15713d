import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metadataUrlsOf } from './issuer-metadata.js';
import { TokenVerifier, type TokenVerifierOptions } from './token-verifier.js';

/**
 * A loopback issuer with a path (as Keycloak's realms have) that publishes its
 * metadata at the RFC 8414 location only, and counts the requests it gets.
 */
describe('TokenVerifier', () => {
  let server: Server;
  let issuer: string;
  let privateKey: CryptoKey;
  let jwk: JWK;
  let metadataIssuer: string;
  const requests: string[] = [];
  const resource = 'https://gateway.example/mcp';
  let now = Date.UTC(2026, 0, 1);

  beforeAll(async () => {
    ({ privateKey } = await generateKeyPair('ES256', { extractable: true }));
    jwk = { ...(await exportJWK(privateKey)), kid: 'k1', alg: 'ES256' };
    delete jwk.d;
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      if (req.url === '/.well-known/oauth-authorization-server/realms/team') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ issuer: metadataIssuer, jwks_uri: `${issuer}/keys` }));
      } else if (req.url === '/realms/team/keys') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ keys: [jwk] }));
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/team`;
    metadataIssuer = issuer;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const verifier = (options: Partial<TokenVerifierOptions> = {}) =>
    new TokenVerifier({
      issuers: [{ issuer }],
      resource,
      algorithms: ['ES256'],
      clockSkewMs: 30_000,
      jwksCacheMs: 600_000,
      jwksCooldownMs: 0,
      actorClaim: 'sub',
      prefixIssuer: false,
      clock: () => now,
      ...options,
    });
  const sign = (claims: Record<string, unknown>, omit: string[] = []) => {
    const all: Record<string, unknown> = {
      iss: issuer,
      aud: resource,
      sub: 'user-1',
      exp: Math.floor(now / 1000) + 300,
      jti: 'id-1',
      ...claims,
    };
    for (const name of omit) delete all[name];
    return new SignJWT(all).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(privateKey);
  };

  it('RFC 8414 inserts the well-known segment before the issuer path; OpenID appends it', () => {
    expect(metadataUrlsOf('https://idp.example/realms/team')).toEqual([
      'https://idp.example/.well-known/oauth-authorization-server/realms/team',
      'https://idp.example/realms/team/.well-known/openid-configuration',
    ]);
    expect(metadataUrlsOf('https://idp.example/')).toEqual([
      'https://idp.example/.well-known/oauth-authorization-server',
      'https://idp.example/.well-known/openid-configuration',
    ]);
  });

  it('accepts a good token: actor, issuer, jti, scopes from scope or scp', async () => {
    const v = verifier();
    expect(await v.verify(await sign({ scope: 'a b' }), 'unused')).toEqual({
      token: {
        actor: 'user-1',
        issuer,
        jti: 'id-1',
        clientId: 'user-1',
        scopes: ['a', 'b'],
        expiresAt: expect.any(Number),
      },
    });
    const scp = await v.verify(await sign({ scp: ['x', 'y'], azp: 'app-7', jti: undefined }), 'unused');
    expect(scp).toMatchObject({ token: { scopes: ['x', 'y'], clientId: 'app-7', jti: null } });
    const prefixed = await verifier({ prefixIssuer: true, actorClaim: 'oid' }).verify(
      await sign({ oid: 'o-9' }),
      '',
    );
    expect(prefixed).toMatchObject({ token: { actor: `${issuer}#o-9` } });
  });

  it('refuses a token without exp or without the actor claim, and one not yet valid', async () => {
    const v = verifier();
    expect(await v.verify(await sign({}, ['exp']), '')).toMatchObject({ problem: 'invalid', message: /exp/ });
    expect(await v.verify(await sign({}, ['sub']), '')).toMatchObject({ problem: 'invalid', message: /sub/ });
    expect(await v.verify(await sign({ sub: '' }), '')).toMatchObject({ problem: 'invalid' });
    const future = await sign({ nbf: Math.floor(now / 1000) + 120 });
    expect(await v.verify(future, '')).toMatchObject({ problem: 'invalid', message: /nbf/ });
    now += 91_000; // inside the 30 s leeway
    expect(await v.verify(future, '')).toHaveProperty('token');
    now -= 91_000;
  });

  it('the audience defaults to the resource, else the front URL; an explicit list replaces it', async () => {
    const token = await sign({ aud: 'api://idem' });
    expect(await verifier().verify(token, '')).toMatchObject({ problem: 'invalid', message: /audience/ });
    expect(await verifier({ audience: ['api://idem'] }).verify(token, '')).toHaveProperty('token');
    const noResource = verifier({ resource: undefined });
    expect(await noResource.verify(token, 'api://idem')).toHaveProperty('token');
  });

  it('metadata naming another issuer makes tokens uncheckable (503), not accepted; it is not asked again at once', async () => {
    metadataIssuer = 'https://someone-else.example';
    try {
      const v = verifier();
      const before = requests.length;
      expect(await v.verify(await sign({}), '')).toMatchObject({
        problem: 'unavailable',
        message: /someone-else/,
      });
      expect(await v.verify(await sign({}), '')).toMatchObject({ problem: 'unavailable' });
      expect(requests.length - before).toBe(1);
    } finally {
      metadataIssuer = issuer;
    }
  });

  it('an unreachable key set is unavailable (503), never a refusal of the token', async () => {
    const v = verifier({ issuers: [{ issuer, jwksUri: 'http://127.0.0.1:1/keys' }] });
    expect(await v.verify(await sign({}), '')).toMatchObject({ problem: 'unavailable' });
  });

  it('an HMAC token is refused even when the attacker signs it with the public key material', async () => {
    const secret = new TextEncoder().encode(JSON.stringify(jwk));
    const token = await new SignJWT({
      iss: issuer,
      aud: resource,
      sub: 'x',
      exp: Math.floor(now / 1000) + 60,
    })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .sign(secret);
    expect(await verifier().verify(token, '')).toMatchObject({ problem: 'invalid', message: /algorithm/ });
  });
});
