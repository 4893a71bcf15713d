/**
 * `idem gateway` flags for the common cases (issue 26, item 5), as an
 * operator runs them: the CLI as its own process, a real Streamable HTTP
 * upstream on loopback that records the headers it gets, a real stdio client.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/cli/gateway-config.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { idemCommand } from '../support/idem-cli.js';
import { MCP_HEADERS, messagesOf, rawRequest } from '../support/raw-http.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { createCountingServer } from './fixtures/counting-server.js';

const children: ChildProcess[] = [];
const servers: Server[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  removeTemporaries();
});

/** The counting server over stateless Streamable HTTP, remembering each request's headers. */
async function recordingUpstream(dir: string): Promise<{ url: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push(req.headers);
      const body = Buffer.concat(chunks).toString('utf8');
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const mcp = createCountingServer(dir);
      res.on('close', () => void mcp.close());
      void mcp
        .connect(transport)
        .then(() => transport.handleRequest(req, res, body ? JSON.parse(body) : undefined));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, seen };
}

/** Starts `idem gateway <args>`; resolves with the child once it says where it serves HTTP. */
async function startGateway(args: string[], env: Record<string, string>) {
  const cli = idemCommand(['gateway', ...args]);
  const child = spawn(cli.command, cli.args, {
    cwd: cli.cwd,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /Streamable HTTP on (http:\S+)/.exec(stderr);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`idem gateway exited with ${code}:\n${stderr}`)));
  });
  return { child, url };
}

const call = (id: number, key: string) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'count', arguments: { key } } });

describe('idem gateway flags', () => {
  it('--port, --stateless and --header with an HTTP upstream URL after --: served on 127.0.0.1:<port> without sessions, the header sent upstream', async () => {
    const upstream = await recordingUpstream(freshDir('flag-counts'));
    const { url } = await startGateway(
      // Single quotes in a shell: the gateway takes ${UPSTREAM_KEY} from its environment.
      ['--port', '0', '--stateless', '--header', 'X-Api-Key: $' + '{UPSTREAM_KEY}', '--', upstream.url],
      { IDEM_DATA_DIR: freshDir('flag-data'), UPSTREAM_KEY: 'key-from-env' },
    );
    expect(new URL(url).hostname).toBe('127.0.0.1');
    // Stateless: a tools/call with no initialize and no session is served.
    const answer = await rawRequest(url, {
      headers: { ...MCP_HEADERS, 'mcp-protocol-version': '2025-11-25' },
      body: call(1, 'flags'),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers['mcp-session-id']).toBeUndefined();
    expect(messagesOf(answer)[0]).toMatchObject({
      id: 1,
      result: { structuredContent: { key: 'flags', value: 1 } },
    });
    expect(upstream.seen.length).toBeGreaterThan(0);
    for (const headers of upstream.seen) expect(headers['x-api-key']).toBe('key-from-env');
  });

  it('--stdio with --config: stdio is served beside the config’s HTTP front', async () => {
    const dir = freshDir('flag-stdio');
    const configPath = join(dir, 'idem.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        data_dir: join(dir, 'data'),
        listen: { http: { host: '127.0.0.1', port: 0 } },
        upstreams: { counter: countingUpstream(freshDir('flag-stdio-counts')) },
      }),
    );
    const { child } = await startGateway(['--config', configPath, '--stdio'], {});
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const reply = new Promise<Record<string, unknown>>((resolve) =>
      lines.on('line', (line) => {
        const message = JSON.parse(line) as Record<string, unknown>;
        if (message.id === 7) resolve(message);
      }),
    );
    child.stdin?.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'stdio', version: '1' },
        },
      })}\n`,
    );
    expect(await reply).toMatchObject({ id: 7, result: { protocolVersion: '2025-11-25' } });
  });

  it('refuses what cannot be meant, saying what to do instead', () => {
    expect(() => buildConfig(['node', 'server.js'], { header: ['X-A: b'] })).toThrow(
      /--header is for an HTTP upstream/,
    );
    expect(() => buildConfig(['http://127.0.0.1:1/mcp'], { listen: '127.0.0.1:1', port: '2' })).toThrow(
      /either --listen or --port/,
    );
    expect(() => buildConfig(['node', 'server.js'], { stateless: true })).toThrow(
      /--stateless is for the HTTP front/,
    );
    expect(() => buildConfig(['https://h.example/mcp'], { header: ['no colon'] })).toThrow(
      /expected "Name: value"/,
    );
    expect(buildConfig(['https://h.example/mcp'], { port: '9000' })).toMatchObject({
      upstreams: { h_example: { url: 'https://h.example/mcp' } },
      listen: { stdio: false, http: { host: '127.0.0.1', port: 9000 } },
    });
  });
});
