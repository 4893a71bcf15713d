import type { Registry } from 'prom-client';
import { STORE_ANSWER_MS } from '../defaults.js';
import type { ExecutionState } from '../journal/states.js';
import type { ExecutionStore, StateCount } from '../store/types.js';

/**
 * What the store holds right now, read at each scrape (prom-client's `collect`): how many
 * executions wait for an operator — outcome unknown, or awaiting approval — and how long the
 * oldest of each has waited, by the store's clock. Read from the store rather than counted by
 * this process, so every gateway, console and `idem` command on the store is seen, and a
 * restart loses nothing. One bounded read per scrape (ExecutionStore.countStates), shared by
 * every gauge of it.
 *
 * A store that does not answer within STORE_ANSWER_MS still gets a scrape: `idem_store_up 0`,
 * and no sample of the gauges read from it (no stale or made-up value to alert on).
 */

/** The states an operator must act on, and the names their gauges take. */
const WATCHED: readonly { state: ExecutionState; count: Named; age: Named }[] = [
  {
    state: 'unknown',
    count: {
      name: 'idem_executions_unknown',
      help: 'Executions whose outcome is unknown, until an operator (or a status probe) resolves them; read from the store',
    },
    age: {
      name: 'idem_oldest_unknown_age_seconds',
      help: "Seconds since the oldest unknown outcome became unknown, by the store's clock; 0 when there is none",
    },
  },
  {
    state: 'awaiting_approval',
    count: {
      name: 'idem_executions_awaiting_approval',
      help: 'Executions awaiting approval, until decided or expired; read from the store',
    },
    age: {
      name: 'idem_oldest_awaiting_approval_age_seconds',
      help: "Seconds the oldest execution awaiting approval has waited, by the store's clock; 0 when there is none",
    },
  },
];
type Named = { name: string; help: string };

type Read = { up: true; counts: StateCount[]; readAt: number } | { up: false };

export function registerStoreGauges(
  { Gauge }: typeof import('prom-client'),
  registry: Registry,
  storeOf: () => ExecutionStore | undefined,
): void {
  const registers = [registry];
  // Every gauge's collect starts in the same tick of a scrape (Registry.metrics): they share one read.
  let reading: Promise<Read> | undefined;
  const read = (): Promise<Read> =>
    (reading ??= readStore(storeOf()).finally(() => {
      reading = undefined;
    }));

  new Gauge({
    name: 'idem_store_up',
    help: `1 when the store answered this scrape's read within ${STORE_ANSWER_MS / 1000} s, else 0`,
    registers,
    async collect() {
      this.set((await read()).up ? 1 : 0);
    },
  });
  for (const watched of WATCHED) {
    /** This scrape's count and age of the oldest; undefined when the store did not answer. */
    const sampleOf = async (): Promise<{ count: number; ageSeconds: number } | undefined> => {
      const now = await read();
      if (!now.up) return undefined;
      const counted = now.counts.find((c) => c.state === watched.state);
      if (!counted) return undefined;
      const since = counted.oldestUpdatedAt;
      return {
        count: counted.count,
        ageSeconds: since === null ? 0 : Math.max(0, now.readAt - since) / 1000,
      };
    };
    // Both read the same sample; with no sample (store down, state not counted) each drops its value.
    for (const [config, pick] of [
      [watched.count, (sample: { count: number }) => sample.count],
      [watched.age, (sample: { ageSeconds: number }) => sample.ageSeconds],
    ] as const) {
      new Gauge({
        ...config,
        registers,
        async collect() {
          const sample = await sampleOf();
          if (sample) this.set(pick(sample));
          else this.remove();
        },
      });
    }
  }
}

/** One countStates, bounded in time: a store that hangs is as down as one that refuses. */
async function readStore(store: ExecutionStore | undefined): Promise<Read> {
  if (!store) return { up: false };
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    store.countStates(WATCHED.map((w) => w.state)).then(
      ({ counts, readAt }): Read => ({ up: true, counts, readAt }),
      (): Read => ({ up: false }),
    ),
    new Promise<Read>((resolve) => {
      timer = setTimeout(() => resolve({ up: false }), STORE_ANSWER_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}
