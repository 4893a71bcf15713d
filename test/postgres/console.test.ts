import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../src/console/server.js';
import { OutcomeUnknownError } from '../../src/errors.js';
import type { ToolCall } from '../../src/executions/call.js';
import { ExecutionEngine } from '../../src/executions/engine.js';
import { Fingerprinter } from '../../src/identity/fingerprint.js';
import { JOURNAL_STREAMS } from '../../src/journal/events.js';
import { verifyStore } from '../../src/journal/verify-store.js';
import { openStore } from '../../src/store/index.js';
import type { ExecutionStore } from '../../src/store/types.js';
import { libraryCall } from '../support/engine-setup.js';
import { postgresForTests, type TestPostgres } from '../support/postgres.js';

/**
 * The console over PostgreSQL (the browser tests run it over SQLite): the
 * same pages and the same resolve rule, through real HTTP on loopback.
 */
const TOKEN = 'pg-console-token-0123456789abcdef';
let pg: TestPostgres;
let store: ExecutionStore;
let running: RunningConsole;
let base = '';
const refs: Record<string, string> = {};

function call(key: string): ToolCall {
  return libraryCall({ replay: 'status' }, { key });
}

beforeAll(async () => {
  pg = await postgresForTests();
  store = await openStore(pg.url);
  const engine = new ExecutionEngine({ store, fingerprinter: new Fingerprinter(randomBytes(32)) });
  const done = await engine.execute(call('done'), async () => ({ content: [{ type: 'text', text: 'ok' }] }));
  refs.done = done._meta?.['io.idem/execution-id'] as string;
  const lost = await engine.execute(call('lost'), async () => {
    throw new OutcomeUnknownError('connection lost after send');
  });
  refs.lost = lost._meta?.['io.idem/execution-id'] as string;
  running = await startConsole({
    store,
    token: TOKEN,
    port: 0,
    verifyJournal: () =>
      verifyStore({ kind: 'postgres', url: pg.url }, { streams: [...JOURNAL_STREAMS], heads: [] }),
  });
  base = running.url.replace(/\/$/, '');
}, 120_000);

afterAll(async () => {
  await running?.close();
  await store?.close();
  await pg?.dispose();
}, 60_000);

async function login(): Promise<string> {
  const response = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: new URLSearchParams({ operator: 'bob', token: TOKEN }).toString(),
  });
  expect(response.status).toBe(303);
  const cookie = response.headers.get('set-cookie') ?? '';
  expect(cookie).toMatch(/HttpOnly/);
  expect(cookie).toMatch(/SameSite=Strict/);
  return cookie.split(';')[0] as string;
}

describe('the console over PostgreSQL', () => {
  it('lists the executions, unknown first; resolves the unknown one; the journal verifies', async () => {
    const cookie = await login();
    const list = await (await fetch(`${base}/executions`, { headers: { cookie } })).text();
    expect(list.indexOf(refs.lost as string)).toBeGreaterThan(0);
    expect(list.indexOf(refs.lost as string)).toBeLessThan(list.indexOf(refs.done as string));

    const page = await (await fetch(`${base}/executions/${refs.lost}`, { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] as string;
    const resolved = await fetch(`${base}/executions/${refs.lost}/resolve`, {
      method: 'POST',
      headers: { cookie, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, as: 'failed', note: 'the processor has no such charge' }).toString(),
    });
    expect(resolved.status).toBe(200);
    expect(await resolved.text()).toContain('unknown → failed');
    expect((await store.get(refs.lost as string))?.state).toBe('failed');
    const timeline = await store.journalFor(refs.lost as string);
    expect(timeline.find((e) => e.kind === 'operator_resolution')?.detail).toMatchObject({
      by: 'operator:bob',
      as: 'failed',
    });

    // The rule is the CLI's: a finished execution is not resolved again (409, nothing changes).
    const again = await fetch(`${base}/executions/${refs.done}/resolve`, {
      method: 'POST',
      headers: { cookie, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, as: 'failed', note: 'x' }).toString(),
    });
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('only an unknown outcome');
    expect((await store.get(refs.done as string))?.state).toBe('completed');

    const journal = await (await fetch(`${base}/journal`, { headers: { cookie } })).text();
    expect(journal).toContain('id="verdict" class="ok"');
  }, 60_000);
});
