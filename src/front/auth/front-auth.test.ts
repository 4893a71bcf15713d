import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bearerChallenge } from './challenge.js';
import { createFrontAuth } from './front-auth.js';
import { metadataUrlOf } from './protected-resource.js';
import { ScopePolicy } from './scopes.js';
import { TokenVerifier } from './token-verifier.js';

const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const FRONT = 'http://127.0.0.1:8787/mcp';

describe('the front auth', () => {
  it('the challenge quotes only what RFC 6750 allows', () => {
    expect(bearerChallenge({ error: 'invalid_token', description: 'bad "x"\\\n' })).toBe(
      'Bearer realm="idem", error="invalid_token", error_description="bad  x   "',
    );
    expect(
      bearerChallenge({
        resourceMetadata: 'https://g.example/.well-known/oauth-protected-resource/mcp',
        scope: ['a', 'b'],
      }),
    ).toBe(
      'Bearer resource_metadata="https://g.example/.well-known/oauth-protected-resource/mcp", scope="a b"',
    );
  });

  it('the metadata URL inserts the well-known prefix before the resource path (RFC 9728 §3.1)', () => {
    expect(metadataUrlOf('https://g.example/mcp')).toBe(
      'https://g.example/.well-known/oauth-protected-resource/mcp',
    );
    expect(metadataUrlOf('https://g.example/')).toBe(
      'https://g.example/.well-known/oauth-protected-resource',
    );
    expect(metadataUrlOf('https://g.example:8443/a/b/')).toBe(
      'https://g.example:8443/.well-known/oauth-protected-resource/a/b',
    );
  });

  it('static tokens and OAuth together: a static token is its actor with every scope; the rest goes to the verifier', async () => {
    const auth = createFrontAuth({
      bearer: new Map([[sha('static-secret'), 'ci']]),
      oauth: {
        issuers: ['https://idp.example'],
        scopes: new ScopePolicy(['mcp'], { deploy: ['deploy:write'] }),
        verifier: new TokenVerifier({
          issuers: [{ issuer: 'https://idp.example', jwksUri: 'http://127.0.0.1:1/keys' }],
          algorithms: ['RS256'],
          clockSkewMs: 0,
          jwksCacheMs: 0,
          jwksCooldownMs: 0,
          actorClaim: 'sub',
          prefixIssuer: false,
        }),
      },
    });
    const ok = await auth.authenticate('Bearer static-secret', FRONT);
    expect(ok).toEqual({ auth: { token: '', clientId: 'ci', scopes: [], extra: { actor: 'ci' } } });
    if (!('auth' in ok)) throw new Error('unreachable');
    expect(
      auth.authorize(
        ok.auth,
        [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'deploy' } }],
        FRONT,
      ),
    ).toBeUndefined();

    const missing = await auth.authenticate(undefined, FRONT);
    expect(missing).toEqual({
      refused: {
        status: 401,
        challenge:
          'Bearer resource_metadata="http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp", scope="mcp"',
        message: expect.stringContaining('WWW-Authenticate'),
      },
    });
    // Not a b64token (a space, a quote): refused as invalid without reaching the verifier.
    const odd = await auth.authenticate('Bearer a b', FRONT);
    expect(odd).toMatchObject({
      refused: { status: 401, challenge: expect.stringContaining('invalid_token') },
    });
    expect((await auth.authenticate('Basic dXNlcjpwYXNz', FRONT)) as object).toMatchObject({
      refused: { status: 401, challenge: expect.not.stringContaining('error=') },
    });

    const oauthCaller = {
      token: '',
      clientId: 'app',
      scopes: ['mcp'],
      extra: { actor: 'u', issuer: 'https://idp.example', jti: null },
    };
    const refusal = auth.authorize(
      oauthCaller,
      [
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'deploy' } },
      ],
      FRONT,
    );
    expect(refusal).toMatchObject({
      status: 403,
      challenge: expect.stringContaining('scope="mcp deploy:write"'),
    });
    expect(auth.scopesMissing(oauthCaller, 'deploy')).toEqual(['deploy:write']);
    expect(auth.scopesMissing(oauthCaller, 'other')).toEqual([]);

    expect(auth.wellKnown('/.well-known/oauth-protected-resource/mcp', FRONT)).toEqual({
      resource: FRONT,
      authorization_servers: ['https://idp.example'],
      scopes_supported: ['mcp', 'deploy:write'],
      bearer_methods_supported: ['header'],
      resource_name: 'Idem gateway',
    });
    expect(auth.wellKnown('/.well-known/oauth-protected-resource/other', FRONT)).toBeUndefined();
  });

  it('a tool named like an Object prototype key needs only the base scopes', () => {
    expect(new ScopePolicy(['mcp'], { deploy: ['d'] }).forTool('constructor')).toEqual(['mcp']);
  });
});
