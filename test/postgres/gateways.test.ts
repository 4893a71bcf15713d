import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf } from '../../src/executions/answers.js';
import { executionsOf, readExecutions, readStarts } from '../gateway/fixtures/counting-server.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, mcpClient, startGatewayProcess } from '../support/gateway-process.js';
import { REPO_ROOT } from '../support/node22.js';
import { postgresForTests, type TestPostgres } from '../support/postgres.js';
import { fleetMemberConfig } from '../support/postgres-fleet.js';
import { askUntilSettled } from '../support/until-settled.js';
import { PATIENTLY } from '../support/wait.js';

/**
 * Several gateway processes on one PostgreSQL database: one truth. The
 * upstream is the counting fixture; every execution of `count` is a line in a
 * file shared by all upstream processes, so "executed once" is counted on the
 * far side of every gateway.
 */
const work = mkdtempSync(join(tmpdir(), 'idem-pg-gateways-'));
const counts = join(work, 'counts');
mkdirSync(counts);
let pg: TestPostgres;
const gateways: GatewayProcess[] = [];
const clients: Client[] = [];

function gatewayConfig(name: string, url: string, lease: string) {
  return fleetMemberConfig(
    {
      work,
      name,
      url,
      // A burst of 1000 claims on a loaded two-core machine may queue for a connection longer than the
      // fail-fast defaults (5 s); here a slow answer is fine, a refused one would hide what is tested.
      store: { pool: { max: 8, connection_timeout: '60s' }, statement_timeout: '60s' },
    },
    {
      upstreams: { counter: countingUpstream(counts) },
      // The claiming gateway's lease is the one every other gateway judges the execution by.
      tools: { count: { replay: 'status', lease, timeout: '90s', attach_window: '1h' } },
      sweep_interval: '1h',
    },
  );
}

/** Leases long enough that a loaded two-core machine never lets a live one lapse, unless a test wants it short. */
async function startGateway(
  name: string,
  options: Parameters<typeof startGatewayProcess>[2] & { lease?: string } = {},
) {
  const { lease = '10s', ...processOptions } = options;
  const gateway = await startGatewayProcess(
    gatewayConfig(name, pg.url, lease),
    join(work, `${name}.json`),
    processOptions,
  );
  gateways.push(gateway);
  return gateway;
}

async function client(gateway: GatewayProcess): Promise<Client> {
  // The same client name everywhere: one agent, whichever gateway it reaches.
  const c = await mcpClient(gateway.url, 'fleet-agent');
  clients.push(c);
  return c;
}

const count = (c: Client, args: Record<string, unknown>) =>
  c.callTool({ name: 'count', arguments: args }, undefined, { timeout: 120_000 }) as Promise<CallToolResult>;
const release = (file: string) => writeFileSync(join(counts, file), '');

/** The execution's lease end and the database's clock now, both in ms (the clock every gateway judges by). */
async function leaseOf(key: string): Promise<{ expiresAt: number; now: number }> {
  const { rows } = await pg.admin().query<{ expires_at: string; now: string }>(
    `SELECT lease_expires_at AS expires_at, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now
     FROM executions WHERE (arguments_preview::jsonb)->>'key' = $1`,
    [key],
  );
  const row = rows[0];
  if (!row?.expires_at) throw new Error(`no leased execution for ${key}`);
  return { expiresAt: Number(row.expires_at), now: Number(row.now) };
}

beforeAll(async () => {
  pg = await postgresForTests();
}, 120_000);

afterAll(async () => {
  // Let any held upstream call finish, so no fixture process outlives the run.
  for (let i = 0; i < 10; i++) release(`hold-${i}`);
  for (const c of clients) await c.close().catch(() => {});
  for (const g of gateways) await g.kill('SIGKILL');
  // A killed gateway's upstream may still be inside a held call: it goes with the run, not 120 s later.
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

describe('four gateway processes on one PostgreSQL database', () => {
  it('1000 concurrent identical calls spread across them: exactly one dispatch; everyone else IDEM_IN_FLIGHT or the stored result', async () => {
    const fleet = await Promise.all(['gw-1', 'gw-2', 'gw-3', 'gw-4'].map((name) => startGateway(name)));
    const agents = await Promise.all(fleet.flatMap((g) => [client(g), client(g)]));
    const args = { key: 'fleet-1', hold_file: 'hold-1' };
    let answered = 0;
    const calls = agents.flatMap((agent) =>
      Array.from({ length: 125 }, () => count(agent, args).finally(() => answered++)),
    );
    // Every caller but the winner answers while the winner waits on the held upstream.
    await vi.waitFor(() => expect(answered).toBe(999), { timeout: 120_000, interval: 50 });
    expect(executionsOf(counts, 'fleet-1')).toBe(1);
    release('hold-1');
    const results = await Promise.all(calls);
    expect(results).toHaveLength(1000);
    expect(executionsOf(counts, 'fleet-1')).toBe(1);
    const outcomes = results.map(
      (r) => idemCodeOf(r) ?? (r._meta?.['io.idem/replayed'] ? 'replayed' : 'executed'),
    );
    expect(outcomes.filter((o) => o === 'executed')).toHaveLength(1);
    expect(outcomes.filter((o) => o !== 'executed' && o !== 'IDEM_IN_FLIGHT' && o !== 'replayed')).toEqual(
      [],
    );
    const later = await count(agents[7] as Client, args);
    expect(later._meta?.['io.idem/replayed']).toBe(true);
    expect(executionsOf(counts, 'fleet-1')).toBe(1);
  }, 300_000);

  it('a gateway SIGKILLed mid-dispatch: another sees the lease expire and answers IDEM_OUTCOME_UNKNOWN; no second dispatch', async () => {
    const doomed = await startGateway('gw-doomed', { lease: '1s' });
    const survivor = gateways[0] as GatewayProcess;
    const first = await client(doomed);
    void count(first, { key: 'killed-1', hold_file: 'hold-2' }).catch(() => {});
    await vi.waitFor(() => expect(executionsOf(counts, 'killed-1')).toBe(1), PATIENTLY);
    expect(executionsOf(counts, 'killed-1')).toBe(1);
    await doomed.kill('SIGKILL');
    const other = await client(survivor);
    const early = await count(other, { key: 'killed-1', hold_file: 'hold-2' });
    expect(['IDEM_IN_FLIGHT', 'IDEM_OUTCOME_UNKNOWN']).toContain(idemCodeOf(early));
    // In flight until the dead holder's lease runs out by the database's clock (its last renewal may
    // have landed just before the kill): asked again until the answer changes, however slow the machine.
    const after = await askUntilSettled(
      () => count(other, { key: 'killed-1', hold_file: 'hold-2' }),
      PATIENTLY,
    );
    expect(idemCodeOf(after)).toBe('IDEM_OUTCOME_UNKNOWN');
    expect(executionsOf(counts, 'killed-1')).toBe(1);
  }, 120_000);

  it('a gateway whose clock is ten minutes off neither shortens nor extends leases', async () => {
    const preload = [join(REPO_ROOT, 'test/support/skew-clock.mjs')];
    const fast = await startGateway('gw-fast', {
      env: { CLOCK_SKEW_MS: String(10 * 60_000) },
      preload,
      lease: '2s',
    });
    const slow = await startGateway('gw-slow', {
      env: { CLOCK_SKEW_MS: String(-10 * 60_000) },
      preload,
      lease: '2s',
    });
    const honest = await client(gateways[1] as GatewayProcess);
    for (const [gateway, key, hold] of [
      [fast, 'skew-fast', 'hold-3'],
      [slow, 'skew-slow', 'hold-4'],
    ] as const) {
      const holder = await client(gateway);
      void count(holder, { key, hold_file: hold }).catch(() => {});
      await vi.waitFor(() => expect(executionsOf(counts, key)).toBe(1), PATIENTLY);
      // Well past one lease length: the lease the claim granted has run out by the database's clock, so
      // only the skewed holder's renewals (timed by the database's clock too) keep it alive.
      const granted = (await leaseOf(key)).expiresAt;
      await vi.waitFor(
        async () => expect((await leaseOf(key)).now).toBeGreaterThan(granted + 1_000),
        PATIENTLY,
      );
      expect(idemCodeOf(await count(honest, { key, hold_file: hold }))).toBe('IDEM_IN_FLIGHT');
      // Its holder dies: by the database's clock the lease ends about a lease later — not ten minutes early
      // or late (asked again until the answer changes; the wait's cap is far below ten minutes).
      await gateway.kill('SIGKILL');
      const answer = await askUntilSettled(() => count(honest, { key, hold_file: hold }), PATIENTLY);
      expect(idemCodeOf(answer)).toBe('IDEM_OUTCOME_UNKNOWN');
      expect(executionsOf(counts, key)).toBe(1);
    }
  }, 180_000);

  it('PostgreSQL stopped during load: no dispatch without a recorded intent, IDEM_NOT_EXECUTED meanwhile, service resumes without restarts, nothing lost', async () => {
    expect(pg.server, 'this test stops the throwaway server; with IDEM_PG_URL it cannot').toBeDefined();
    const server = pg.server as NonNullable<TestPostgres['server']>;
    const agent = await client(gateways[2] as GatewayProcess);
    const answers = new Map<string, string>();
    const call = async (key: string) => {
      const r = await count(agent, { key }).catch(
        (error: unknown) =>
          ({ isError: true, content: [{ type: 'text', text: String(error) }] }) as CallToolResult,
      );
      answers.set(key, idemCodeOf(r) ?? (r.isError ? 'error' : 'executed'));
    };
    for (let i = 0; i < 20; i++) await call(`load-before-${i}`);
    const stopping = server.stop('fast');
    for (let i = 0; i < 30; i++) await call(`load-during-${i}`);
    await stopping;
    for (let i = 0; i < 10; i++) await call(`load-down-${i}`);
    await server.start();
    // A fresh call each time until one executes: service is back without a restart, whenever that is.
    let resumed = false;
    let attempt = 0;
    await vi.waitFor(async () => {
      const key = `load-after-${attempt++}`;
      await call(key);
      resumed = answers.get(key) === 'executed';
      expect(resumed).toBe(true);
    }, PATIENTLY);
    expect(resumed).toBe(true);

    // While the database was down, callers were told it is safe to retry.
    for (let i = 0; i < 10; i++) expect(answers.get(`load-down-${i}`)).toBe('IDEM_NOT_EXECUTED');
    for (let i = 0; i < 20; i++) expect(answers.get(`load-before-${i}`)).toBe('executed');
    const recorded = new Set(
      (
        await pg.admin().query<{ preview: string }>('SELECT arguments_preview AS preview FROM executions')
      ).rows.map((r) => (JSON.parse(r.preview) as { key: string }).key),
    );
    // Every effect the upstream saw has its intent on record; nothing accepted before the outage was lost.
    const executed = readExecutions(counts)
      .map((e) => e.key)
      .filter((k) => k.startsWith('load-'));
    for (const key of executed)
      expect(recorded.has(key), `dispatched without a recorded intent: ${key}`).toBe(true);
    for (let i = 0; i < 20; i++) expect(recorded.has(`load-before-${i}`)).toBe(true);
    // Nothing refused as not executed reached the upstream.
    for (const [key, answer] of answers)
      if (answer === 'IDEM_NOT_EXECUTED') expect(executed).not.toContain(key);
    expect(existsSync(counts)).toBe(true);
  }, 180_000);
});
