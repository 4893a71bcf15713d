/**
 * The one contract suite every ExecutionStore must pass (src/store/types.ts), as Kysely keeps its
 * tests: one feature file per group of behaviours beside this one (claim.test.ts,
 * transition.test.ts, sweep.test.ts, …), and each runs its group on every backend listed here,
 * through describeEveryStore. A backend cannot skip a file, and a file holds one group. A new
 * backend is one more entry in STORE_BACKENDS; it is done when every file is green on it.
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import { postgresForTests } from '../../../test/support/postgres.js';
import { tempSqliteDir } from '../../../test/support/sqlite-files.js';
import { sleep } from '../../../test/support/wait.js';
import type { ActivityEntry, ActivityEventInput } from '../../journal/events.js';
import type { ExecutionState } from '../../journal/states.js';
import { MemoryStore } from '../memory/index.js';
import { PostgresStore } from '../postgres/index.js';
import { SqliteStore } from '../sqlite/index.js';
import type { ClaimInput, ExecutionRecord, ExecutionStore } from '../types.js';
import { LONG_MS } from './fixtures.contract.js';

export interface OpenedStore {
  /** A fresh, empty store. */
  store: ExecutionStore;
  /**
   * The store's clock, when the test controls it. Without one, the suite lets
   * real time pass (short waits), so a store that reads its database's clock
   * passes unchanged.
   */
  clock?: { advance(ms: number): void };
  /** Closes the store and removes whatever it left behind. */
  cleanup(): Promise<void>;
}

/** One backend as the suite runs it: what it needs for a whole file (a server), and a fresh store per test. */
interface StoreBackend {
  name: string;
  start(): Promise<{ open(): Promise<OpenedStore>; stop(): Promise<void> }>;
}

/** A clock a test moves by hand. */
function testClock(): { now: () => number; clock: OpenedStore['clock'] } {
  let now = Date.now();
  return {
    now: () => now,
    clock: {
      advance(ms: number) {
        now += ms;
      },
    },
  };
}

const nothingToStop = async () => {};

function sqliteBackend(name: string, clocked: boolean): StoreBackend {
  return {
    name,
    start: async () => ({
      async open() {
        const tmp = tempSqliteDir();
        const manual = clocked ? testClock() : undefined;
        const store = await SqliteStore.open({
          path: join(tmp.dir, 'idem.db'),
          ...(manual ? { clock: manual.now } : {}),
        });
        return {
          store,
          ...(manual ? { clock: manual.clock } : {}),
          cleanup: async () => {
            await store.close();
            tmp.remove();
          },
        };
      },
      stop: nothingToStop,
    }),
  };
}

function memoryBackend(name: string, clocked: boolean): StoreBackend {
  return {
    name,
    start: async () => ({
      async open() {
        const manual = clocked ? testClock() : undefined;
        const store = new MemoryStore(manual ? { clock: manual.now } : {});
        return { store, ...(manual ? { clock: manual.clock } : {}), cleanup: () => store.close() };
      },
      stop: nothingToStop,
    }),
  };
}

/** PostgreSQL on the throwaway server of test/support/postgres.ts (or IDEM_PG_URL's): one per file, a schema per test. */
const postgresBackend: StoreBackend = {
  name: 'postgres, a fresh schema per test',
  async start() {
    const pg = await postgresForTests();
    return {
      async open() {
        const { schema, drop } = await pg.freshSchema();
        const store = await PostgresStore.open({ url: pg.url, schema });
        return {
          store,
          cleanup: async () => {
            await store.close();
            await drop();
          },
        };
      },
      stop: () => pg.dispose(),
    };
  },
};

/** Every backend, each as the suite runs it: by the real clock, and by a test clock where the store takes one. */
export const STORE_BACKENDS: readonly StoreBackend[] = [
  memoryBackend('memory, real clock', false),
  memoryBackend('memory, test clock', true),
  sqliteBackend('sqlite file', false),
  sqliteBackend('sqlite file, test clock', true),
  postgresBackend,
];

/** What a feature file's tests use: the store of the test running, and the steps that put it in a state. */
export interface StoreUnderTest {
  readonly store: ExecutionStore;
  /** Lets `ms` pass: the test clock moved, or real time waited. */
  elapse(ms: number): Promise<void>;
  /** A claim that must win. */
  claimWon(
    overrides?: Partial<ClaimInput>,
    events?: ActivityEventInput[],
  ): Promise<{ input: ClaimInput; record: ExecutionRecord }>;
  /** An execution in `state`, reached the way the engine gets there. */
  executionIn(
    state: ExecutionState,
    overrides?: Partial<ClaimInput>,
  ): Promise<{ input: ClaimInput; record: ExecutionRecord }>;
  /** The activity journal's entries of one kind. */
  kinds(kind: ActivityEntry['kind']): Promise<ActivityEntry[]>;
}

/**
 * Runs `group` (a feature file's tests) on every backend of STORE_BACKENDS, each test on a fresh
 * store: `describe('ExecutionStore contract: <backend>') › describe(group) › it(…)`.
 */
export function describeEveryStore(group: string, tests: (t: StoreUnderTest) => void): void {
  for (const backend of STORE_BACKENDS) {
    describe(`ExecutionStore contract: ${backend.name}`, () => {
      let started: Awaited<ReturnType<StoreBackend['start']>> | undefined;
      let opened: OpenedStore | undefined;
      beforeAll(async () => {
        started = await backend.start();
      });
      afterAll(async () => {
        await started?.stop();
      });
      beforeEach(async () => {
        opened = await started!.open();
      });
      afterEach(async () => {
        await opened?.cleanup();
        opened = undefined;
      });
      describe(group, () => tests(underTest(() => opened)));
    });
  }
}

function underTest(current: () => OpenedStore | undefined): StoreUnderTest {
  const opened = () => {
    const now = current();
    if (!now) throw new Error('the store contract: used outside a test');
    return now;
  };
  const t: StoreUnderTest = {
    get store() {
      return opened().store;
    },
    async elapse(ms) {
      const { clock } = opened();
      if (clock) clock.advance(ms);
      else await sleep(ms);
    },
    async claimWon(overrides = {}, events) {
      const input = claimInput(overrides);
      const result = await t.store.claim(input, events ? { events } : undefined);
      if (!result.won) throw new Error(`claim of ${input.id} unexpectedly lost`);
      return { input, record: result.record };
    },
    executionIn: (state, overrides = {}) => reach(t, state, overrides),
    async kinds(kind) {
      return (await t.store.readJournal()).filter((e) => e.kind === kind);
    },
  };
  return t;
}

/** The way the engine reaches `state`: a claim, then the transitions it makes. */
async function reach(t: StoreUnderTest, state: ExecutionState, overrides: Partial<ClaimInput>) {
  const { store } = t;
  const { input, record } = await t.claimWon(overrides);
  if (state === 'accepted') return { input, record };
  if (state === 'awaiting_approval' || state === 'denied' || state === 'authorized') {
    const waiting = await store.transition({
      id: record.id,
      from: ['accepted'],
      to: 'awaiting_approval',
    });
    if (state === 'awaiting_approval') return { input, record: waiting! };
    const decided = await store.transition({ id: record.id, from: ['awaiting_approval'], to: state });
    return { input, record: decided! };
  }
  const dispatched = await store.transition({
    id: record.id,
    from: ['accepted'],
    to: 'dispatched',
    token: input.claimToken,
    dispatchTimeoutMs: LONG_MS,
  });
  if (state === 'dispatched') return { input, record: dispatched! };
  const finished = await store.transition({
    id: record.id,
    from: ['dispatched'],
    to: state,
    token: input.claimToken,
    holder: null,
    ...(state === 'completed' || state === 'failed'
      ? {
          outcome: {
            result: { content: [{ type: 'text' as const, text: state }], isError: state === 'failed' },
          },
        }
      : {}),
  });
  return { input, record: finished! };
}
