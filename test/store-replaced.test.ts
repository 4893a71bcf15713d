/**
 * The SQLite file cut or replaced under a running `idem gateway` (issue 44 item 6): SQLite keeps
 * writing through its open handle and would go on answering OK while what this life recorded is
 * gone — a retry of an action it ran would then find nothing and run again. The gateway notices
 * (before every write, and once a second: src/store/sqlite/file-watch.ts) and fails closed: the
 * next call with effects is IDEM_NOT_EXECUTED with nothing sent, and /readyz says 503, whether
 * or not a call comes.
 */
import { renameSync, rmSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../src/executions/answers.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { executionsOf } from './gateway/fixtures/counting-server.js';
import { countingUpstream } from './support/counting-upstream.js';
import { mcpClient, startGatewayProcess } from './support/gateway-process.js';
import { freshDir, removeTemporaries } from './support/temp-dirs.js';
import { PATIENTLY } from './support/wait.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});
afterAll(removeTemporaries);

const count = (client: Client, key: string) =>
  client.callTool({ name: 'count', arguments: { key } }) as Promise<CallToolResult>;

/** A gateway (its own process) on a SQLite store in a fresh data directory, and a client that has made `calls` calls. */
async function runningGateway(calls: number) {
  const dataDir = freshDir('replaced');
  const counts = freshDir('counts');
  const gateway = await startGatewayProcess(
    { data_dir: dataDir, upstreams: { counter: countingUpstream(counts) } },
    join(dataDir, 'idem.json'),
  );
  cleanups.push(() => gateway.kill('SIGKILL'));
  const client = await mcpClient(gateway.url, 'replaced-store-agent');
  cleanups.push(() => client.close());
  for (let i = 0; i < calls; i++) expect((await count(client, `before-${i}`)).isError).toBeFalsy();
  const readyz = async () => (await fetch(new URL('/readyz', gateway.url))).status;
  expect(await readyz()).toBe(200);
  return { db: join(dataDir, 'idem.db'), counts, client, readyz, gateway };
}

const changes: Array<[string, (db: string) => void | Promise<void>]> = [
  ['truncated to half', (db) => truncateSync(db, Math.floor(statSync(db).size / 2))],
  ['truncated to 0 bytes', (db) => truncateSync(db, 0)],
  ['deleted', (db) => rmSync(db)],
  [
    'replaced by another (valid, empty) store',
    async (db) => {
      const other = `${db}.other`;
      await (await SqliteStore.open({ path: other })).close();
      renameSync(other, db);
    },
  ],
];

describe('the SQLite store changed under a running gateway', { timeout: 120_000 }, () => {
  for (const [what, change] of changes) {
    it(`${what}: readiness drops by itself, and the next call is not executed`, async () => {
      const { db, counts, client, readyz, gateway } = await runningGateway(3);
      await change(db);
      // No call comes: the once-a-second check takes readiness down.
      await vi.waitFor(async () => expect(await readyz()).toBe(503), PATIENTLY);
      const after = await count(client, 'after');
      expect(idemCodeOf(after)).toBe('IDEM_NOT_EXECUTED');
      expect(executionsOf(counts, 'after')).toBe(0);
      expect(gateway.stderr()).not.toContain('unhandled rejection');
    });
  }

  it('a call right after the file is cut is not executed (the check before the claim commits)', async () => {
    const { db, counts, client } = await runningGateway(3);
    truncateSync(db, 0);
    const after = await count(client, 'at-once');
    expect(idemCodeOf(after)).toBe('IDEM_NOT_EXECUTED');
    expect(executionsOf(counts, 'at-once')).toBe(0);
  });
});
