/**
 * A credential a target echoes back across a cut of its answer — the
 * `max_response_bytes` cut of an HTTP action tool's body, the excerpt quoted
 * in an `IDEM_OUTCOME_UNKNOWN` for a 5xx — is scrubbed whole, at every offset:
 * no part of it is left in the live answer, the SQLite file or its WAL, or
 * `idem executions show`. Before, the cut came first and kept up to all but
 * two of its characters.
 */
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { META } from '../../src/executions/answers.js';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { MIN_CUT_SECRET_CHARS } from '../../src/identity/secret-cut.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

/** 52 characters, as the issue's; every run of three holds a letter no hex digest or ULID has. */
const SECRET = 'Zq9vX7pL2mR4tW8zK3nB6cY1hJ5fD0gS2aE4uI7oP9wQ3eT6rU1y';
const BODY_LIMIT = 256;
/** The excerpt of a body an IDEM_OUTCOME_UNKNOWN quotes (http-channel.ts). */
const EXCERPT_CHARS = 500;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(removeTemporaries);

/** The runs of `length` characters of the secret that `text` holds. */
function partsIn(text: string | Buffer, length: number): string[] {
  const found: string[] = [];
  for (let i = 0; i + length <= SECRET.length; i++) {
    const part = SECRET.slice(i, i + length);
    if (text.includes(part)) found.push(part);
  }
  return found;
}

/**
 * `show --json` without its digests (fingerprints and request digests are base64url: a run of
 * three of the secret's characters turns up in one by chance about once in a hundred runs).
 */
function withoutDigests(json: string): string {
  return JSON.stringify(JSON.parse(json), (key, value) =>
    /digest|fingerprint/i.test(key) && typeof value === 'string' ? '' : value,
  );
}

/**
 * A target that echoes the bearer credential it got so that `before` of its
 * characters come before `cutAt`: `/ok/<before>` answers 200, `/down/<before>` 502.
 */
async function echoingTarget(): Promise<number> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const [, kind, before] = (req.url ?? '').split('/');
      const credential = String(req.headers.authorization).replace(/^Bearer /, '');
      const cutAt = kind === 'ok' ? BODY_LIMIT : EXCERPT_CHARS;
      res.writeHead(kind === 'ok' ? 200 : 502, { 'content-type': 'text/plain' });
      res.end(`${'.'.repeat(cutAt - Number(before))}${credential}${'-'.repeat(100)}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

describe('a credential echoed across a cut of an HTTP action tool answer', () => {
  it('is scrubbed whole at every offset: live answer, SQLite file and WAL, `idem executions show`', async () => {
    const dataDir = freshDir('http-cuts');
    const keyFile = join(dataDir, 'pay.key');
    writeFileSync(keyFile, `${SECRET}\n`);
    chmodSync(keyFile, 0o600);
    const port = await echoingTarget();
    const tool = (path: string, extra: Record<string, unknown> = {}) => ({
      description: 'Echoes the credential across a cut.',
      input_schema: { type: 'object', properties: { before: { type: 'integer' } }, required: ['before'] },
      method: 'POST',
      url: `http://127.0.0.1:${port}/${path}/{before}`,
      credential: { name: 'pay', scheme: 'bearer' },
      allow: { addresses: ['127.0.0.1'] },
      contract: { replay: 'keyed', timeout: '30s' },
      ...extra,
    });
    const config = GatewayConfigSchema.parse({
      data_dir: dataDir,
      listen: { http: { host: '127.0.0.1', port: 0 } },
      upstreams: { counter: countingUpstream(freshDir('http-cuts-counts')) },
      credentials: { pay: { file: keyFile } },
      http_tools: {
        cut_body: tool('ok', { max_response_bytes: BODY_LIMIT }),
        cut_excerpt: tool('down'),
      },
    });
    const gateway = await Gateway.start(config, { version: 'test', upstreamStderr: 'ignore' });
    cleanups.push(() => gateway.close());
    const { url } = await gateway.serveHttp();
    const client = new Client({ name: 'http-cuts-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    cleanups.push(() => client.close());

    // Every offset of each cut, all at once (distinct intents; the store commits them together).
    const cases = ['cut_body', 'cut_excerpt'].flatMap((name) =>
      Array.from({ length: SECRET.length - 1 }, (_, i) => ({ name, before: i + 1 })),
    );
    const answers = await Promise.all(
      cases.map(
        ({ name, before }) => client.callTool({ name, arguments: { before } }) as Promise<CallToolResult>,
      ),
    );
    const refs: string[] = [];
    for (const [i, answer] of answers.entries()) {
      const { name, before } = cases[i] as { name: string; before: number };
      const text = JSON.stringify(answer);
      // The target did echo it, across the cut: what reached the caller says a secret was there.
      expect(text, `${name}, ${before} before the cut`).toContain('[secret]');
      expect(partsIn(text, MIN_CUT_SECRET_CHARS), `${name}, ${before} before the cut`).toEqual([]);
      if (name === 'cut_body') expect(text).toContain(`[truncated at ${BODY_LIMIT} bytes]`);
      else expect(text).toContain('IDEM_OUTCOME_UNKNOWN');
      refs.push(answer._meta?.[META.executionId] as string);
    }

    // Read the WAL before close checkpoints it away. Four characters: a run of three could be chance in binary pages.
    const files = readdirSync(dataDir).filter((f) => f.startsWith('idem.db'));
    expect(files).toEqual(expect.arrayContaining(['idem.db', 'idem.db-wal']));
    for (const file of files) expect(partsIn(readFileSync(join(dataDir, file)), 4), file).toEqual([]);
    await gateway.close();

    // The edges of both cuts, as an operator reads them.
    const shown = await Promise.all(
      [0, 50, 51, 101].map((i) =>
        runIdem(['executions', 'show', refs[i] as string, '--db', join(dataDir, 'idem.db'), '--json'], {
          dataDir,
        }),
      ),
    );
    for (const show of shown) {
      expect(show.code).toBe(0);
      expect(partsIn(withoutDigests(show.stdout), MIN_CUT_SECRET_CHARS)).toEqual([]);
    }
  }, 180_000);
});
