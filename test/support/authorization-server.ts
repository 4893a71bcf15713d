/**
 * A real OAuth 2.1 authorization server on loopback for the auth tests: the
 * `oidc-provider` package (the certified OpenID provider for Node), with the
 * client-credentials grant and resource indicators (RFC 8707), issuing
 * RFC 9068 JWT access tokens whose `aud` is the resource asked for. Its keys
 * can be rotated while it runs (same issuer, same port), and the test can
 * sign tokens with any key it held, to play an attacker or a revoked key.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';

export interface TestClient {
  id: string;
  secret: string;
  /** Scopes this client may ask for. */
  scopes: string[];
}

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export interface AuthorizationServer {
  issuer: string;
  clients: TestClient[];
  /** The key the server signs with now. */
  currentKey(): SigningKey;
  /** A client-credentials token for `resource` (its aud). */
  token(clientId: string, options: { resource: string; scope?: string }): Promise<string>;
  /** Signs with a new key from now on; the old one stays published only if `keepOld`. */
  rotateKeys(options: { keepOld: boolean }): Promise<SigningKey>;
  /** Token requests seen, to show a client came here. */
  readonly tokenRequests: number;
  close(): Promise<void>;
}

export const TOKEN_TTL_SECONDS = 600;

async function newKey(kid: string): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' } };
}

/** Starts an authorization server on a free loopback port with these clients. */
export async function startAuthorizationServer(clients: TestClient[]): Promise<AuthorizationServer> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let keys: SigningKey[] = [await newKey('key-1')];
  let generation = 1;
  let tokenRequests = 0;
  const allScopes = [...new Set(clients.flatMap((c) => c.scopes))];

  const providerFor = (published: SigningKey[]) =>
    new Provider(issuer, {
      clients: clients.map((c) => ({
        client_id: c.id,
        client_secret: c.secret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: c.scopes.join(' '),
        id_token_signed_response_alg: 'ES256',
      })),
      // The first key signs; the others are only published (still verifiable).
      jwks: { keys: published.map((k) => k.jwk) as never },
      scopes: allScopes,
      ttl: { ClientCredentials: TOKEN_TTL_SECONDS },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          // Any resource: the tests ask for tokens of other audiences too.
          defaultResource: () => undefined as never,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, resource: string) => ({
            scope: allScopes.join(' '),
            audience: resource,
            accessTokenTTL: TOKEN_TTL_SECONDS,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          }),
        },
      },
    });
  let provider = providerFor(keys);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/token')) tokenRequests++;
    provider.callback()(req, res);
  });

  return {
    issuer,
    clients,
    currentKey: () => keys[0] as SigningKey,
    get tokenRequests() {
      return tokenRequests;
    },
    async token(clientId, { resource, scope }) {
      const client = clients.find((c) => c.id === clientId);
      if (!client) throw new Error(`no client ${clientId}`);
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          resource,
          ...(scope !== undefined ? { scope } : {}),
        }),
      });
      const body = (await response.json()) as { access_token?: string };
      if (!response.ok || !body.access_token)
        throw new Error(`token request failed: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async rotateKeys({ keepOld }) {
      generation++;
      const fresh = await newKey(`key-${generation}`);
      keys = keepOld ? [fresh, ...keys] : [fresh];
      provider = providerFor(keys);
      return fresh;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
