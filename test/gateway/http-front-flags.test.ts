/**
 * The HTTP front's flags for users coming from mcp-proxy and supergateway (issue 46, items 2
 * and 7): --path, --cors, --api-key-env / --api-key, --tls-cert / --tls-key, each the same as
 * its config key; a port out of range is a usage error; the start line says its level once.
 * The CLI as its own process over loopback, in front of the counting server.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { buildConfig } from '../../src/cli/gateway-config.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { stopChild } from '../support/gateway-process.js';
import { idemCommand } from '../support/idem-cli.js';
import { MCP_HEADERS, rawRequest, rawSession } from '../support/raw-http.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { PATIENTLY } from '../support/wait.js';

const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) await stopChild(child, 'SIGKILL');
  removeTemporaries();
});

/** `idem gateway <args> -- <counting server>`; resolves once it says where it serves. */
async function gateway(args: string[], env: Record<string, string> = {}) {
  const upstream = countingUpstream(freshDir('front-flags-counts'));
  const cli = idemCommand(['gateway', ...args, '--', upstream.command, ...upstream.args]);
  const child = spawn(cli.command, cli.args, {
    cwd: cli.cwd,
    env: { ...process.env, IDEM_DATA_DIR: freshDir('front-flags-data'), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await Promise.race([
    vi.waitFor(() => {
      const match = /Streamable HTTP on (https?:\S+)/.exec(stderr);
      if (!match) throw new Error('not listening yet');
      return match[1] as string;
    }, PATIENTLY),
    exited.then((code) => {
      throw new Error(`idem gateway exited with ${code}:\n${stderr}`);
    }),
  ]);
  return { url, stderr: () => stderr };
}

const initialize = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
});

describe('the HTTP front from flags alone', () => {
  it('--path, --cors and --api-key-env: the endpoint moves, a listed origin gets CORS, a call needs the key', async () => {
    const { url, stderr } = await gateway(
      ['--port', '0', '--path', '/rpc', '--cors', 'https://app.example', '--api-key-env', 'FRONT_KEY'],
      { FRONT_KEY: 'key-from-env' },
    );
    expect(new URL(url).pathname).toBe('/rpc');
    // With a key, no "no auth" warning.
    expect(stderr()).not.toContain('has no auth');

    const refused = await rawRequest(url, { headers: MCP_HEADERS, body: initialize });
    expect(refused.status).toBe(401);
    const wrongKey = await rawRequest(url, {
      headers: { ...MCP_HEADERS, authorization: 'Bearer not-the-key' },
      body: initialize,
    });
    expect(wrongKey.status).toBe(401);
    const session = await rawSession(url, 'keyed', { authorization: 'Bearer key-from-env' });
    const answer = await session.call({
      id: 1,
      method: 'tools/call',
      params: { name: 'count', arguments: { key: 'k' } },
    });
    expect(answer).toMatchObject({ result: { structuredContent: { key: 'k', value: 1 } } });

    const preflight = await rawRequest(url, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, mcp-session-id',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example');
    const otherOrigin = await rawRequest(url, {
      headers: { ...MCP_HEADERS, origin: 'https://elsewhere.example', authorization: 'Bearer key-from-env' },
      body: initialize,
    });
    expect(otherOrigin.status).toBe(403);
    // The old endpoint is not served.
    const old = await rawRequest(url.replace('/rpc', '/mcp'), {
      headers: { ...MCP_HEADERS, authorization: 'Bearer key-from-env' },
      body: initialize,
    });
    expect(old.status).toBe(404);
  });

  it('--tls-cert and --tls-key: HTTPS, with that certificate', async () => {
    const dir = freshDir('front-flags-tls');
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync('openssl', [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'],
      ...['-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1'],
      ...['-addext', 'subjectAltName=IP:127.0.0.1'],
    ]);
    const { url } = await gateway(['--port', '0', '--tls-cert', cert, '--tls-key', key]);
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const target = new URL(url);
      const req = httpsRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: MCP_HEADERS,
          ca: readFileSync(cert),
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end(initialize);
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('"protocolVersion":"2025-11-25"');
  });

  it('says the start-up warning with one level word', async () => {
    const { stderr } = await gateway(['--port', '0']);
    expect(stderr()).toContain('idem gateway: warn: the HTTP front on 127.0.0.1 has no auth');
    expect(stderr()).not.toMatch(/warn: WARNING/);
  });
});

describe('a flag and its config key are one thing', () => {
  it('what cannot be meant is a usage error (exit 2) naming the flag, before anything is served', async () => {
    const dir = freshDir('front-flags-usage');
    const withAuth = join(dir, 'idem.json');
    writeFileSync(
      withAuth,
      JSON.stringify({
        upstreams: { c: countingUpstream(dir) },
        listen: { http: { port: 0 } },
        auth: { bearer: [{ token_env: 'SOME_TOKEN', actor: 'ci' }] },
      }),
    );
    const cases: [string[], RegExp][] = [
      [['--port', '99999', '--', 'node', 'x.js'], /--port 99999: listen\.http\.port: .*65535/],
      [
        ['--port', '0', '--cors', '*', '--', 'node', 'x.js'],
        /--cors \*: listen\.http\.allowed_origins\.0: .*"\*" is not accepted/,
      ],
      [['--port', '0', '--cors', 'https://a.example/path', '--', 'node', 'x.js'], /expected an origin/],
      [['--path', '/rpc', '--', 'node', 'x.js'], /--path is for the HTTP front/],
      [['--port', '0', '--path', 'rpc', '--', 'node', 'x.js'], /--path rpc: listen\.http\.path/],
      [['--port', '0', '--tls-cert', 'c.pem', '--', 'node', 'x.js'], /--tls-cert needs --tls-key/],
      [
        ['--port', '0', '--tls-cert', 'none.pem', '--tls-key', 'none.key', '--', 'node', 'x.js'],
        /listen\.http\.tls\.cert_file .*ENOENT/,
      ],
      [
        ['--port', '0', '--api-key-env', 'IDEM_TEST_UNSET_KEY', '--', 'node', 'x.js'],
        /environment variable IDEM_TEST_UNSET_KEY is not set/,
      ],
      [
        ['--port', '0', '--api-key', 'a', '--api-key-env', 'B', '--', 'node', 'x.js'],
        /either --api-key or --api-key-env/,
      ],
      [
        ['--config', withAuth, '--api-key-env', 'K'],
        /--api-key-env: the config has an auth: section already/,
      ],
    ];
    for (const [args, said] of cases) {
      const result = await runIdem(['gateway', ...args], {
        dataDir: freshDir('front-flags-usage-data'),
        timeoutMs: 30_000,
      });
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(said);
    }
  });

  it('a flag wins over its key in the file; --api-key is kept as its SHA-256, like auth.bearer token_sha256', () => {
    const dir = freshDir('front-flags-file');
    const path = join(dir, 'idem.json');
    writeFileSync(
      path,
      JSON.stringify({
        upstreams: { c: { command: 'node', args: ['x.js'] } },
        listen: { http: { port: 8787, path: '/mcp', allowed_origins: ['https://old.example'] } },
      }),
    );
    const config = buildConfig([], {
      config: path,
      path: '/rpc',
      cors: ['https://a.example,https://b.example'],
    });
    expect(config.listen?.http).toMatchObject({
      port: 8787,
      path: '/rpc',
      allowed_origins: ['https://a.example', 'https://b.example'],
    });
    const keyed = buildConfig(['node', 'x.js'], { port: '0', apiKey: 'literal-key' });
    expect(keyed.auth?.bearer).toEqual([
      { token_sha256: createHash('sha256').update('literal-key').digest('hex'), actor: 'api-key' },
    ]);
  });
});
