import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { approvalRequest, claimInput } from '../../test/support/claim-input.js';
import { withFaults } from '../../test/support/faulty-store.js';
import { tempSqliteDir } from '../../test/support/sqlite-files.js';
import { expirePending } from '../approval/decide.js';
import { decideAsOperator } from '../approval/operator-decision.js';
import { StoreUnavailableError } from '../errors.js';
import { resolveAsOperator } from '../executions/operator.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import type { ExecutionStore } from '../store/types.js';
import { type IdemMetrics, loadMetrics } from './metrics.js';
import { measuredStore } from './store.js';

const MINUTE = 60_000;

/** One scrape's samples of `name` whose labels include `labels`: undefined when it has none. */
async function sample(
  metrics: IdemMetrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const metric = (await metrics.registry!.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []).filter((v) =>
    Object.entries(labels).every(([k, l]) => (v.labels as Record<string, unknown>)[k] === l),
  );
  return values.length === 0 ? undefined : values.reduce((sum, v) => sum + v.value, 0);
}

/** The gauges a scrape reads from the store, in one scrape. */
async function waiting(metrics: IdemMetrics) {
  const text = await metrics.registry!.metrics();
  const value = (name: string) => {
    const line = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return line ? Number(line[1]) : undefined;
  };
  return {
    up: value('idem_store_up'),
    unknown: value('idem_executions_unknown'),
    unknownAge: value('idem_oldest_unknown_age_seconds'),
    awaiting: value('idem_executions_awaiting_approval'),
    awaitingAge: value('idem_oldest_awaiting_approval_age_seconds'),
  };
}

async function measured(store: ExecutionStore) {
  let measuredOne: ExecutionStore | undefined;
  const metrics = await loadMetrics({ required: true, store: () => measuredOne, processMetrics: true });
  measuredOne = measuredStore(store, metrics);
  return { metrics, store: measuredOne };
}

/** An execution the dispatcher lost track of: claimed, dispatched, then unknown (the engine's writes). */
async function unknownExecution(store: ExecutionStore): Promise<string> {
  const input = claimInput({ state: 'dispatched', dispatchTimeoutMs: 10 * MINUTE });
  await store.claim(input);
  await store.transition({ id: input.id, from: ['dispatched'], to: 'unknown', token: input.claimToken });
  return input.id;
}

async function awaitingApproval(store: ExecutionStore, expiresInMs = 60 * MINUTE): Promise<string> {
  const input = claimInput({ state: 'awaiting_approval', approval: approvalRequest({ expiresInMs }) });
  await store.claim(input);
  return input.id;
}

/** The stores the exact-value tests run on, each with the clock the test moves. */
const STORES: [string, (clock: () => number) => Promise<ExecutionStore>][] = [
  ['memory', async (clock) => new MemoryStore({ clock })],
  [
    'SQLite',
    async (clock) => {
      const { dir, remove } = tempSqliteDir();
      const store = await SqliteStore.open({ path: join(dir, 'idem.db'), clock });
      opened.push(async () => {
        await store.close();
        remove();
      });
      return store;
    },
  ],
];
const opened: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of opened.splice(0)) await close();
});

describe.each(STORES)('what waits on an operator, read from the %s store at each scrape', (_, open) => {
  it('an unknown outcome: counted, its age the store clock since it became unknown; resolved, back to 0', async () => {
    let now = 1_700_000_000_000;
    const { metrics, store } = await measured(await open(() => now));
    expect(await waiting(metrics)).toEqual({ up: 1, unknown: 0, unknownAge: 0, awaiting: 0, awaitingAge: 0 });

    const first = await unknownExecution(store);
    now += 90_000;
    const second = await unknownExecution(store);
    now += 30_000;
    expect(await waiting(metrics)).toMatchObject({ unknown: 2, unknownAge: 120 });

    const resolved = await resolveAsOperator(
      store,
      first,
      'failed',
      'operator:alice',
      'no charge at the bank',
    );
    expect(resolved.resolved).toBe(true);
    expect(await waiting(metrics)).toMatchObject({ unknown: 1, unknownAge: 30 });
    await resolveAsOperator(store, second, 'completed', 'operator:alice', 'charge ch_1 found');
    expect(await waiting(metrics)).toMatchObject({ up: 1, unknown: 0, unknownAge: 0 });

    expect(await sample(metrics, 'idem_operator_resolutions_total', { outcome: 'failed' })).toBe(1);
    expect(await sample(metrics, 'idem_operator_resolutions_total', { outcome: 'completed' })).toBe(1);
    // Refused (nothing left to resolve): nothing counted.
    await resolveAsOperator(store, second, 'failed', 'operator:bob', 'again');
    expect(await sample(metrics, 'idem_operator_resolutions_total')).toBe(2);
  });

  it('approvals waiting: counted and aged; each decision counted once by decision and channel', async () => {
    let now = 1_700_000_000_000;
    const { metrics, store } = await measured(await open(() => now));
    // Every series there from the start, at 0: an increase from nothing is one rate() never sees.
    expect(await sample(metrics, 'idem_approval_decisions_total', { decision: 'approved', via: 'cli' })).toBe(
      0,
    );
    expect(
      await sample(metrics, 'idem_approval_decisions_total', { decision: 'expired', via: 'expiry' }),
    ).toBe(0);
    expect(await sample(metrics, 'idem_operator_resolutions_total', { outcome: 'completed' })).toBe(0);

    // The oldest, with five minutes to be decided in: nobody decides it.
    await awaitingApproval(store, 5 * MINUTE);
    now += 2 * MINUTE;
    const approved = await awaitingApproval(store);
    const denied = await awaitingApproval(store);
    now += MINUTE;
    expect(await waiting(metrics)).toMatchObject({ awaiting: 3, awaitingAge: 180, unknown: 0 });

    const cli = { by: 'operator:alice', via: 'cli' } as const;
    expect((await decideAsOperator(store, approved, 'approved', cli)).decided).toBe(true);
    // A second decision on the same request loses: not counted.
    expect((await decideAsOperator(store, approved, 'denied', cli)).decided).toBe(false);
    await decideAsOperator(store, denied, 'denied', { by: 'operator:bob', via: 'console', reason: 'no' });
    expect(await waiting(metrics)).toMatchObject({ awaiting: 1, awaitingAge: 180 });
    now += 5 * MINUTE;
    expect(await expirePending(store)).toBe(1);
    expect(await waiting(metrics)).toMatchObject({ awaiting: 0, awaitingAge: 0 });

    const decisions = async (decision: string, via: string) =>
      sample(metrics, 'idem_approval_decisions_total', { decision, via });
    expect(await decisions('approved', 'cli')).toBe(1);
    expect(await decisions('denied', 'cli')).toBe(0);
    expect(await decisions('denied', 'console')).toBe(1);
    expect(await decisions('expired', 'expiry')).toBe(1);
    expect(await sample(metrics, 'idem_approval_decisions_total')).toBe(3);
  });
});

describe('the scrape and the store', () => {
  it('one read of the store per scrape, shared by its gauges', async () => {
    const memory = new MemoryStore();
    let reads = 0;
    const counting = withFaults(memory, {
      countStates: (states) => {
        reads++;
        return memory.countStates(states);
      },
    });
    const { metrics } = await measured(counting);
    await metrics.registry!.metrics();
    expect(reads).toBe(1);
    await metrics.registry!.metrics();
    expect(reads).toBe(2);
  });

  it('a store that fails the read: the scrape answers, idem_store_up 0, no sample of what it could not read', async () => {
    let down = false;
    const memory = new MemoryStore();
    const flaky = withFaults(memory, {
      countStates: (states) =>
        down ? Promise.reject(new StoreUnavailableError('database is down')) : memory.countStates(states),
    });
    const { metrics } = await measured(flaky);
    await unknownExecution(memory);
    expect(await waiting(metrics)).toMatchObject({ up: 1, unknown: 1 });
    down = true;
    expect(await waiting(metrics)).toEqual({
      up: 0,
      unknown: undefined,
      unknownAge: undefined,
      awaiting: undefined,
      awaitingAge: undefined,
    });
    down = false;
    expect(await waiting(metrics)).toMatchObject({ up: 1, unknown: 1 });
    // The failed read is a store error like any other (the scrapes since read the store fine).
    expect(await sample(metrics, 'idem_store_errors_total', { operation: 'countStates' })).toBe(1);
  });

  it('a store that does not answer: up 0 once the read has had its time, the scrape answered all the same', async () => {
    const hanging = withFaults(new MemoryStore(), { countStates: () => new Promise(() => {}) });
    const { metrics } = await measured(hanging);
    expect(await waiting(metrics)).toMatchObject({ up: 0, unknown: undefined });
  });

  it('process_* and nodejs_* of prom-client, on the same registry, when it is served', async () => {
    const { metrics } = await measured(new MemoryStore());
    const names = (await metrics.registry!.getMetricsAsJSON()).map((m) => m.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_heap_size_used_bytes',
      ]),
    );
    expect(names).toContain('nodejs_eventloop_lag_seconds');
    // A registry nobody serves (a gateway without `metrics:` or `console:`) runs no monitor for them.
    const unserved = await loadMetrics({ required: true });
    const unservedNames = (await unserved.registry!.getMetricsAsJSON()).map((m) => m.name);
    expect(unservedNames.filter((n) => n.startsWith('process_') || n.startsWith('nodejs_'))).toEqual([]);
  });
});
