/**
 * GitHub's own OpenAPI document (the @octokit/openapi package, about 1,000 operations) imported
 * in full; then four of its operations — a GET, a POST that creates, a PUT, a DELETE — served by
 * the gateway against a counting loopback target standing in for api.github.com (`server:`):
 * method, path, query, headers and JSON body as the document describes them, and ten concurrent
 * identical creates reaching the target once.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { idemCodeOf, META } from '../../../src/executions/answers.js';
import { GatewayConfigSchema } from '../../../src/gateway/config/index.js';
import { Gateway } from '../../../src/gateway/gateway.js';
import { importHttpTools } from '../../../src/gateway/openapi/index.js';
import { freshDir, removeTemporaries } from '../../support/temp-dirs.js';
import { PATIENTLY } from '../../support/wait.js';
import { type Answer, countingTarget } from './counting-target.js';

const GITHUB = createRequire(import.meta.url).resolve('@octokit/openapi/generated/api.github.com.json');
const TOKEN = 'ghp_loopbackOnly0123456789abcdef';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(removeTemporaries);

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

describe("GitHub's OpenAPI document", () => {
  it('imports in full: operations mapped and skipped counted, the time measured', async () => {
    const config = GatewayConfigSchema.parse({
      store: { kind: 'memory' },
      credentials: { github: { env: 'IDEM_TEST_GITHUB_TOKEN_UNSET' } },
      http_tools_from: [{ openapi: GITHUB, credential: 'github' }],
    });
    const started = performance.now();
    const { config: served, imports } = await importHttpTools(config);
    const ms = performance.now() - started;
    const [github] = imports;
    const mapped = github?.tools.length ?? 0;
    const skipped = github?.skipped ?? [];
    process.stdout.write(
      `GitHub api.github.com.json: ${mapped} operations mapped, ${skipped.length} skipped, in ${Math.round(ms)} ms\n${skipped.map((s) => `  skipped ${s.label}: ${s.reason}\n`).join('')}`,
    );
    expect(mapped).toBeGreaterThan(800);
    expect(mapped + skipped.length).toBeGreaterThan(1000);
    expect(Object.keys(served.http_tools ?? {})).toHaveLength(mapped);
    // Every skip says why; the raw markdown upload (text/plain) is one.
    for (const s of skipped) expect(s.reason.length).toBeGreaterThan(10);
    expect(skipped.map((s) => s.label)).toContain('POST /markdown/raw');
    const replays = new Set(github?.tools.map((t) => t.replay));
    expect([...replays].sort()).toEqual(['read_only', 'review']);
    expect(github?.tools.find((t) => t.name === 'issues_create')?.replay).toBe('review');
    expect(github?.tools.find((t) => t.name === 'repos_get')?.replay).toBe('read_only');
    // A 13 MB document: validating and mapping it takes seconds, more on a loaded machine.
  }, 180_000);

  it('four of its operations through the gateway: requests exactly as the document says, ten identical creates sent once', async () => {
    let releaseCreates!: () => void;
    const creates = new Promise<void>((resolve) => (releaseCreates = resolve));
    const target = await countingTarget(async (request): Promise<Answer> => {
      if (request.method === 'GET') return { status: 200, body: [{ number: 1, title: 'first' }] };
      if (request.method === 'POST') {
        await creates;
        return { status: 201, body: { number: 42, title: (request.body as { title: string }).title } };
      }
      return { status: 204 };
    });
    cleanups.push(target.close);
    const dataDir = freshDir('openapi-github');
    const tokenFile = join(dataDir, 'github.token');
    writeFileSync(tokenFile, `${TOKEN}\n`);
    chmodSync(tokenFile, 0o600);
    const config = GatewayConfigSchema.parse({
      data_dir: dataDir,
      store: { kind: 'memory' },
      listen: { http: { host: '127.0.0.1', port: 0 } },
      credentials: { github: { file: tokenFile } },
      http_tools_from: [
        {
          openapi: GITHUB,
          include: [
            'issues/list-for-repo',
            'issues/create',
            'issues/lock',
            '/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}',
          ],
          credential: 'github',
          server: target.base,
          allow: { addresses: ['127.0.0.1'] },
        },
      ],
    });
    const said: string[] = [];
    const logger = {
      warn: (m: string) => said.push(m),
      error: (m: string) => said.push(m),
      info: (m: string) => said.push(m),
    };
    const gateway = await Gateway.start(config, { version: 'test', logger });
    cleanups.push(() => gateway.close());
    const { url } = await gateway.serveHttp();
    const client = new Client({ name: 'openapi-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    cleanups.push(() => client.close());
    expect(said).toContain(
      `http_tools_from[0]: 4 operations of ${GITHUB} served as HTTP tools, 0 skipped (${said[0]?.match(/\((\d+) ms\)/)?.[1]} ms)`,
    );

    const { tools } = await client.listTools();
    const create = tools.find((t) => t.name === 'issues_create');
    expect(create?.description).toMatch(/^Create an issue/);
    expect(create?.inputSchema.required).toEqual(['owner', 'repo', 'body']);
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['issues_list-for-repo', 'issues_create', 'issues_lock', 'issues_remove-label']),
    );

    // GET: path and query from the arguments, the schema's defaults filled in, no idempotency key.
    const listed = await call(client, 'issues_list-for-repo', {
      owner: 'octo',
      repo: 'hello world',
      state: 'closed',
      labels: 'bug,ui',
      per_page: 5,
    });
    expect(listed.structuredContent).toEqual({ status: 200, body: [{ number: 1, title: 'first' }] });
    const get = target.requests[0];
    expect(get?.method).toBe('GET');
    const getUrl = new URL(get?.url ?? '', target.base);
    expect(getUrl.pathname).toBe('/repos/octo/hello%20world/issues');
    expect(Object.fromEntries(getUrl.searchParams)).toEqual({
      state: 'closed',
      labels: 'bug,ui',
      sort: 'created',
      direction: 'desc',
      per_page: '5',
      page: '1',
    });
    expect(get?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(get?.headers['idempotency-key']).toBeUndefined();
    expect(get?.body).toBeUndefined();

    // POST that creates: ten identical calls at once, one request; the body as given, under `body`.
    const issue = { title: 'Found a bug', body: 'It breaks.', labels: ['bug'] };
    const calls = Array.from({ length: 10 }, () =>
      call(client, 'issues_create', { owner: 'octo', repo: 'hello', body: issue }),
    );
    let settled = 0;
    for (const c of calls) void c.then(() => settled++);
    await vi.waitFor(
      () => expect(target.requests.filter((r) => r.method === 'POST')).toHaveLength(1),
      PATIENTLY,
    );
    // The other nine are answered while the first is still at the target.
    await vi.waitFor(() => expect(settled).toBe(9), PATIENTLY);
    releaseCreates();
    const answers = await Promise.all(calls);
    const posts = target.requests.filter((r) => r.method === 'POST');
    expect(posts).toHaveLength(1);
    const created = answers.filter((a) => !a.isError);
    expect(created).toHaveLength(1);
    expect(answers.filter((a) => idemCodeOf(a) === 'IDEM_IN_FLIGHT')).toHaveLength(9);
    expect(created[0]?.structuredContent).toEqual({
      status: 201,
      body: { number: 42, title: 'Found a bug' },
    });
    expect(posts[0]?.url).toBe('/repos/octo/hello/issues');
    expect(posts[0]?.body).toEqual(issue);
    expect(posts[0]?.headers['content-type']).toBe('application/json');
    expect(posts[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(posts[0]?.headers['idempotency-key']).toBe(created[0]?._meta?.[META.executionId]);
    const again = await call(client, 'issues_create', { owner: 'octo', repo: 'hello', body: issue });
    expect(again._meta?.[META.replayed]).toBe(true);
    expect(target.requests.filter((r) => r.method === 'POST')).toHaveLength(1);

    // PUT with a JSON body; DELETE with a path parameter that needs encoding and no body.
    const locked = await call(client, 'issues_lock', {
      owner: 'octo',
      repo: 'hello',
      issue_number: 42,
      body: { lock_reason: 'resolved' },
    });
    expect(locked.structuredContent).toMatchObject({ status: 204 });
    const put = target.requests.find((r) => r.method === 'PUT');
    expect(put?.url).toBe('/repos/octo/hello/issues/42/lock');
    expect(put?.body).toEqual({ lock_reason: 'resolved' });
    const removed = await call(client, 'issues_remove-label', {
      owner: 'octo',
      repo: 'hello',
      issue_number: 42,
      name: 'needs triage/ui',
    });
    expect(removed.structuredContent).toMatchObject({ status: 204 });
    const del = target.requests.find((r) => r.method === 'DELETE');
    expect(del?.url).toBe('/repos/octo/hello/issues/42/labels/needs%20triage%2Fui');
    expect(del?.body).toBeUndefined();
    expect(del?.headers['idempotency-key']).toBe(removed._meta?.[META.executionId]);

    // An argument the document does not declare is refused before anything is sent.
    const before = target.requests.length;
    const stray = await call(client, 'issues_lock', {
      owner: 'octo',
      repo: 'hello',
      issue_number: 7,
      admin: true,
    });
    expect(idemCodeOf(stray)).toBe('IDEM_INVALID_INPUT');
    expect(target.requests).toHaveLength(before);
  });
});
