/**
 * PostgreSQL stopped while calls are at the target (issue 44 item 5): the target answers, the
 * gateway answers the agent — and the store cannot take the outcome. Before, it was thrown away:
 * the execution stayed dispatched, turned unknown, and each retry got IDEM_REVIEW_REQUIRED for an
 * operator. Now the gateway holds it and writes it once PostgreSQL is back (journaled late), so
 * each retry, through this gateway or another of the fleet, gets the stored result — and the
 * target ran each action once.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf, META } from '../../src/executions/answers.js';
import { executionsOf, readStarts } from '../gateway/fixtures/counting-server.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, mcpClient, startGatewayProcess } from '../support/gateway-process.js';
import { postgresForTests, type TestPostgres } from '../support/postgres.js';
import { fleetMemberConfig } from '../support/postgres-fleet.js';
import { PG_JOURNAL_EVENTS } from '../support/postgres-schemas.js';
import { PATIENTLY } from '../support/wait.js';

const work = mkdtempSync(join(tmpdir(), 'idem-pg-late-'));
const counts = join(work, 'counts');
mkdirSync(counts);
let pg: TestPostgres;
const gateways: GatewayProcess[] = [];
const clients: Client[] = [];

async function gateway(name: string): Promise<{ gateway: GatewayProcess; client: Client }> {
  const started = await startGatewayProcess(
    fleetMemberConfig(
      { work, name, url: pg.url },
      {
        upstreams: { counter: countingUpstream(counts) },
        // A lease shorter than the outage: it lapses while PostgreSQL is down.
        tools: { count: { replay: 'review', lease: '2s', timeout: '90s' } },
      },
    ),
    join(work, `${name}.json`),
  );
  gateways.push(started);
  const client = await mcpClient(started.url, 'late-outcome-agent');
  clients.push(client);
  return { gateway: started, client };
}

const count = (client: Client, key: string) =>
  client.callTool({ name: 'count', arguments: { key, hold_file: 'hold' } }, undefined, {
    timeout: 120_000,
  }) as Promise<CallToolResult>;

beforeAll(async () => {
  pg = await postgresForTests();
}, 120_000);

afterAll(async () => {
  writeFileSync(join(counts, 'hold'), '');
  for (const c of clients) await c.close().catch(() => {});
  for (const g of gateways) await g.kill('SIGKILL');
  for (const pid of readStarts(counts)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await pg?.dispose();
  rmSync(work, { recursive: true, force: true });
}, 120_000);

describe('PostgreSQL stopped while calls are at the target', () => {
  it('the outcomes the gateway holds are written once it is back: every retry, here or on another gateway, gets the stored result', async () => {
    expect(pg.server, 'this test stops the throwaway server; with IDEM_PG_URL it cannot').toBeDefined();
    const server = pg.server as NonNullable<TestPostgres['server']>;
    const a = await gateway('gw-a');
    const b = await gateway('gw-b');
    const keys = ['late-1', 'late-2', 'late-3'];
    const calls = keys.map((key) => count(a.client, key));
    await vi.waitFor(() => expect(keys.map((k) => executionsOf(counts, k))).toEqual([1, 1, 1]), PATIENTLY);

    await server.stop('fast');
    writeFileSync(join(counts, 'hold'), '');
    // The agent is answered with what the target did, the database down or not.
    const answers = await Promise.all(calls);
    for (const [i, answer] of answers.entries()) {
      expect(answer.isError).toBeFalsy();
      expect(answer.structuredContent).toEqual({ key: keys[i], value: 1 });
    }
    await server.start();

    // Held, then written once PostgreSQL answers again: completed, delivered, journaled late.
    const refs = answers.map((answer) => answer._meta?.[META.executionId] as string);
    await vi.waitFor(async () => {
      const { rows } = await pg
        .admin()
        .query<{ state: string; delivered: boolean }>(
          'SELECT state, delivered_at IS NOT NULL AS delivered FROM executions WHERE id = ANY($1) ORDER BY id',
          [refs],
        );
      expect(rows).toEqual(refs.map(() => ({ state: 'completed', delivered: true })));
    }, PATIENTLY);
    const { rows: outcomes } = await pg
      .admin()
      .query<{ detail: string }>(
        `SELECT detail FROM ${PG_JOURNAL_EVENTS} AS e WHERE kind = 'outcome' AND execution_id = ANY($1)`,
        [refs],
      );
    expect(outcomes.map((row) => JSON.parse(row.detail))).toEqual(
      refs.map(() => expect.objectContaining({ state: 'completed', late: true })),
    );

    // Each retry — through the gateway that held it, and through another — is the stored result.
    for (const { client } of [a, b])
      for (const [i, key] of keys.entries()) {
        const retry = await count(client, key);
        expect(idemCodeOf(retry)).toBeUndefined();
        expect(retry._meta?.[META.replayed]).toBe(true);
        expect(retry._meta?.[META.executionId]).toBe(refs[i]);
      }
    expect(keys.map((k) => executionsOf(counts, k))).toEqual([1, 1, 1]);
    expect(a.gateway.stderr()).toContain('outcome recorded late, once the store answered');
    expect(a.gateway.stderr()).not.toContain('unhandled rejection');
  }, 180_000);
});
