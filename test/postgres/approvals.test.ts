import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalView } from '../../src/approval/view.js';
import { idemCodeOf } from '../../src/executions/answers.js';
import { executionsOf } from '../gateway/fixtures/counting-server.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, mcpClient, startGatewayProcess } from '../support/gateway-process.js';
import { postgresForTests, type TestPostgres } from '../support/postgres.js';
import { fleetMemberConfig } from '../support/postgres-fleet.js';
import { runIdem } from '../support/run-cli.js';

/**
 * Approvals with two gateway processes on one PostgreSQL database, decided by
 * the operator CLI against that database while both run. Executions are
 * counted on the far side, by the counting upstream of either gateway.
 */
const work = mkdtempSync(join(tmpdir(), 'idem-pg-approvals-'));
const counts = join(work, 'counts');
mkdirSync(counts);
let pg: TestPostgres;
const gateways: GatewayProcess[] = [];
const clients: Client[] = [];

function config(name: string, url: string) {
  return fleetMemberConfig(
    { work, name, url, store: { pool: { max: 4, connection_timeout: '60s' } } },
    {
      upstreams: { counter: countingUpstream(counts) },
      tools: { count: { replay: 'status', approval: 'every_call', attach_window: '1h', timeout: '90s' } },
      sweep_interval: '1h',
    },
  );
}

async function agent(gateway: GatewayProcess): Promise<Client> {
  // The same client name everywhere: one agent, whichever gateway it reaches.
  const c = await mcpClient(gateway.url, 'fleet-agent');
  clients.push(c);
  return c;
}

const count = (c: Client, key: string) =>
  c.callTool({ name: 'count', arguments: { key } }, undefined, {
    timeout: 120_000,
  }) as Promise<CallToolResult>;
const refOf = (r: CallToolResult) => r._meta?.['io.idem/execution-id'] as string | undefined;
const idem = (args: string[]) => runIdem([...args, '--db', pg.url], { dataDir: work });

beforeAll(async () => {
  pg = await postgresForTests();
  gateways.push(
    ...(await Promise.all(
      ['gw-1', 'gw-2'].map((name) => startGatewayProcess(config(name, pg.url), join(work, `${name}.json`))),
    )),
  );
}, 180_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  for (const g of gateways) await g.kill('SIGKILL');
  await pg?.dispose();
  rmSync(work, { recursive: true, force: true });
}, 120_000);

describe('approvals across two gateway processes on one PostgreSQL database', () => {
  it('one pending approval whichever gateway a retry reaches; approve with the CLI → exactly one dispatch among racing retries', async () => {
    const [gw1, gw2] = gateways as [GatewayProcess, GatewayProcess];
    const first = await count(await agent(gw1), 'pg-approve');
    expect(idemCodeOf(first)).toBe('IDEM_AWAITING_APPROVAL');
    const ref = refOf(first) as string;
    const fromOther = await count(await agent(gw2), 'pg-approve');
    expect(idemCodeOf(fromOther)).toBe('IDEM_AWAITING_APPROVAL');
    expect(refOf(fromOther)).toBe(ref);

    const listed = await idem(['approvals', 'list', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as ApprovalView[]).filter((v) => v.ref === ref)).toHaveLength(1);

    const approved = await idem(['approvals', 'approve', ref, '--operator', 'alice']);
    expect(approved.code, approved.stderr).toBe(0);

    // Retries race from both gateways: one takes the approved execution and dispatches it.
    const racers = await Promise.all([agent(gw1), agent(gw2), agent(gw1), agent(gw2)]);
    const results = await Promise.all(racers.map((c) => count(c, 'pg-approve')));
    expect(executionsOf(counts, 'pg-approve')).toBe(1);
    for (const r of results) {
      expect(refOf(r)).toBe(ref);
      expect([undefined, 'IDEM_IN_FLIGHT']).toContain(idemCodeOf(r));
    }
    // In flight, then the result: every caller gets it in the end.
    const settled = await count(await agent(gw2), 'pg-approve');
    expect(settled.structuredContent).toEqual({ key: 'pg-approve', value: 1 });
    expect(executionsOf(counts, 'pg-approve')).toBe(1);
  }, 240_000);

  it('an approve and a deny at once against the database: one decision; a denial reaches retries on either gateway', async () => {
    const [gw1, gw2] = gateways as [GatewayProcess, GatewayProcess];
    const ref = refOf(await count(await agent(gw1), 'pg-race')) as string;
    const [approve, deny] = await Promise.all([
      idem(['approvals', 'approve', ref, '--operator', 'alice', '--json']),
      idem(['approvals', 'deny', ref, '--operator', 'bob', '--reason', 'no', '--json']),
    ]);
    expect([approve.code, deny.code].sort()).toEqual([0, 1]);
    const decided = [approve, deny].map((r) => JSON.parse(r.stdout) as { decided: boolean });
    expect(decided.filter((d) => d.decided)).toHaveLength(1);
    const retry = await count(await agent(gw2), 'pg-race');
    if (deny.code === 0) {
      expect(idemCodeOf(retry)).toBe('IDEM_DENIED');
      expect(executionsOf(counts, 'pg-race')).toBe(0);
    } else {
      expect(retry.structuredContent).toEqual({ key: 'pg-race', value: 1 });
      expect(executionsOf(counts, 'pg-race')).toBe(1);
    }
  }, 240_000);
});
