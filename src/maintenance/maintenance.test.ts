import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { META } from '../executions/answers.js';
import { SIGNED_HEAD_FILE } from '../journal/signing.js';
import { engineOnManualClock, libraryCall } from '../testing/engine-setup.js';
import { Maintenance } from './maintenance.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A store holding one approval request that nobody decided in time, and one finished execution. */
async function storeWithWork() {
  const setup = engineOnManualClock();
  const waiting = await setup.engine.execute(
    libraryCall({ replay: 'status', approval: 'every_call', approval_timeout: '10m' }, { order: 'o-1' }),
    async () => ({ content: [] }),
  );
  const done = await setup.engine.execute(
    libraryCall(undefined, { order: 'o-2' }, undefined, 'refund'),
    async () => ({
      content: [{ type: 'text', text: 'refunded' }],
    }),
  );
  setup.clock.advance(72 * 3_600_000);
  return {
    ...setup,
    waitingRef: waiting._meta?.[META.executionId] as string,
    doneRef: done._meta?.[META.executionId] as string,
  };
}

describe('Maintenance: one pass of the store upkeep, the same for the gateway, the library and idem sweep', () => {
  it('deletes finished executions past retention, ends overdue approvals as expired, and signs the heads', async () => {
    const { store, waitingRef, doneRef } = await storeWithWork();
    const dataDir = mkdtempSync(join(tmpdir(), 'idem-maintenance-'));
    dirs.push(dataDir);
    const warnings: string[] = [];
    const maintenance = new Maintenance({
      store,
      retentionMs: 48 * 3_600_000,
      signing: { dataDir },
      warn: (message) => warnings.push(message),
    });
    const report = await maintenance.run();
    expect(report.trimmed).toBe(1);
    expect(report.approvalsExpired).toBe(1);
    expect(await store.get(doneRef)).toBeUndefined();
    expect((await store.getApproval(waitingRef))?.decision).toBe('expired');
    expect(existsSync(join(dataDir, SIGNED_HEAD_FILE))).toBe(true);
    expect(warnings).toEqual([]);
  });

  it('a dry run reports what the sweep would delete and changes nothing', async () => {
    const { store, waitingRef, doneRef } = await storeWithWork();
    const maintenance = new Maintenance({ store, retentionMs: 48 * 3_600_000, warn: () => {} });
    const report = await maintenance.run({ dryRun: true });
    expect(report).toMatchObject({ trimmed: 1, approvalsExpired: 0 });
    expect(await store.get(doneRef)).toBeDefined();
    expect((await store.getApproval(waitingRef))?.decision).toBeNull();
  });

  it('a store that fails makes the pass throw; the heads are still signed', async () => {
    const { store } = await storeWithWork();
    const dataDir = mkdtempSync(join(tmpdir(), 'idem-maintenance-'));
    dirs.push(dataDir);
    // The store as it is, but for a sweep that fails (a disk error): everything else still answers.
    const failing = new Proxy(store, {
      get(target, key) {
        if (key === 'sweep') return () => Promise.reject(new Error('disk I/O error'));
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const maintenance = new Maintenance({
      store: failing,
      retentionMs: 1,
      signing: { dataDir },
      warn: () => {},
    });
    await expect(maintenance.run()).rejects.toThrow('disk I/O error');
    expect(existsSync(join(dataDir, SIGNED_HEAD_FILE))).toBe(true);
  });
});
