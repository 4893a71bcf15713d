import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { Idem, insideOf } from '../../src/library/idem.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { ExecutionStore } from '../../src/store/types.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

afterAll(removeTemporaries);

/** PRAGMA synchronous of the store's own connection (it is per connection: another one would not tell). */
function synchronousOf(store: ExecutionStore): string {
  if (!(store instanceof SqliteStore))
    throw new Error(`expected the embedded SQLite store, got ${store.kind}`);
  return store.synchronous();
}

async function startGateway(store?: Record<string, unknown>): Promise<Gateway> {
  const dir = freshDir('durability');
  return Gateway.start(
    GatewayConfigSchema.parse({
      data_dir: dir,
      ...(store ? { store } : {}),
      upstreams: { counting: countingUpstream(dir) },
    }),
    { version: 'test', upstreamStderr: 'ignore' },
  );
}

describe('the embedded store is durable by default (a claim is on disk before dispatch)', () => {
  it('Idem.open() with no store option commits with synchronous=FULL', async () => {
    const idem = await Idem.open({ dataDir: freshDir('durability-lib'), maintenanceIntervalMs: 0 });
    try {
      expect(synchronousOf(insideOf(idem).runtime.store)).toBe('full');
    } finally {
      await idem.close();
    }
  });

  it('Idem.open() trades it for speed only when asked (synchronous: normal)', async () => {
    const dir = freshDir('durability-lib');
    const idem = await Idem.open({
      dataDir: dir,
      maintenanceIntervalMs: 0,
      store: { kind: 'sqlite', path: join(dir, 'fast.db'), synchronous: 'normal' },
    });
    try {
      expect(synchronousOf(insideOf(idem).runtime.store)).toBe('normal');
    } finally {
      await idem.close();
    }
  });

  it('a gateway with no store section, and one with store.kind sqlite, commit with synchronous=FULL', async () => {
    for (const store of [undefined, { kind: 'sqlite' }]) {
      const gateway = await startGateway(store);
      try {
        expect(synchronousOf(gateway.store)).toBe('full');
      } finally {
        await gateway.close();
      }
    }
  });

  it('a gateway config may choose store.synchronous: normal, and nothing else', async () => {
    const gateway = await startGateway({ kind: 'sqlite', synchronous: 'normal' });
    try {
      expect(synchronousOf(gateway.store)).toBe('normal');
    } finally {
      await gateway.close();
    }
    expect(() =>
      GatewayConfigSchema.parse({
        upstreams: { counting: countingUpstream(freshDir('durability')) },
        store: { kind: 'sqlite', synchronous: 'off' },
      }),
    ).toThrow(/synchronous/);
  });
});
