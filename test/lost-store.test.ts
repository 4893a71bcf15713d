import { existsSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyFromFlags } from '../src/cli/audit.js';
import { StoreRefusedError } from '../src/errors.js';
import { GatewayConfigSchema } from '../src/gateway/config/index.js';
import { Gateway } from '../src/gateway/gateway.js';
import { signJournalHeads } from '../src/journal/head-signer.js';
import { Idem } from '../src/library/idem.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { readExecutions } from './gateway/fixtures/counting-server.js';
import { fillWithCompleted } from './support/claim-input.js';
import { countingUpstream } from './support/counting-upstream.js';
import { runIdem } from './support/run-cli.js';
import { freshDir, removeTemporaries } from './support/temp-dirs.js';

/**
 * A lost store (DESIGN §9): the data directory's signed journal heads say
 * executions were recorded, but idem.db is empty or gone. The gateway must
 * not start on it — every retry of a recorded execution would run again —
 * and only `idem store new --accept-lost-executions` begins anew.
 */
afterAll(removeTemporaries);

/** A data directory whose store held `count` completed executions, its heads signed, closed. */
async function usedDataDir(
  count = 20,
): Promise<{ dataDir: string; db: string; config: string; counts: string }> {
  const dataDir = freshDir('lost');
  const db = join(dataDir, 'idem.db');
  const store = await SqliteStore.open({ path: db });
  await fillWithCompleted(store, count);
  await signJournalHeads(store, dataDir);
  await store.close();
  const counts = freshDir('counts');
  const config = join(dataDir, 'idem.json');
  writeFileSync(
    config,
    JSON.stringify({
      data_dir: dataDir,
      upstreams: { counter: countingUpstream(counts) },
      tools: { count: { replay: 'status' } },
    }),
  );
  return { dataDir, db, config, counts };
}

function gatewayRun(config: string, dataDir: string) {
  // A gateway that starts listens until killed: the timeout turns that into a failure here.
  return runIdem(['gateway', '--config', config, '--listen', '127.0.0.1:0'], { dataDir, timeoutMs: 30_000 });
}

describe('idem gateway on a lost SQLite store', () => {
  it('refuses an emptied idem.db (truncate -s 0): exit 1, the evidence and the recovery steps, no upstream', async () => {
    const { dataDir, db, config, counts } = await usedDataDir();
    truncateSync(db, 0);
    const result = await gatewayRun(config, dataDir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`refused the SQLite store at ${db} (lost): the store is empty`);
    expect(result.stderr).toContain(
      `${join(dataDir, 'journal-head.json')} holds signed journal heads up to activity seq`,
    );
    expect(result.stderr).toContain('idem audit verify --db');
    expect(result.stderr).toContain(`idem store new --accept-lost-executions --db ${db}`);
    expect(result.stderr).not.toMatch(/Streamable HTTP on/);
    expect(readExecutions(counts)).toEqual([]);
  });

  it('refuses a deleted idem.db, and does not create one', async () => {
    const { dataDir, db, config, counts } = await usedDataDir();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${db}${suffix}`, { force: true });
    const result = await gatewayRun(config, dataDir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`refused the SQLite store at ${db} (lost): the store does not exist`);
    expect(existsSync(db)).toBe(false);
    expect(readExecutions(counts)).toEqual([]);
  });

  it('refuses a store whose journal is empty though the file is a database (a fresh file put in its place)', async () => {
    const { db, config } = await usedDataDir();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${db}${suffix}`, { force: true });
    await (await SqliteStore.open({ path: db })).close();
    const started = Gateway.start(GatewayConfigSchema.parse(JSON.parse(readFileSync(config, 'utf8'))), {
      version: 'test',
      upstreamStderr: 'ignore',
    });
    const error = await started.then(
      async (gateway) => {
        await gateway.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreRefusedError);
    expect(error).toMatchObject({ reason: 'lost', path: db });
    expect((error as Error).message).toContain('has an empty activity journal');
  });

  it('is refused by the library too (Idem.open on the data directory)', async () => {
    const { dataDir, db } = await usedDataDir();
    truncateSync(db, 0);
    await expect(Idem.open({ dataDir, maintenanceIntervalMs: 0 })).rejects.toMatchObject({ reason: 'lost' });
  });
});

describe('idem store new --accept-lost-executions', () => {
  it('starts anew: the old heads kept aside, the new start journaled and signed; then the gateway starts', async () => {
    const { dataDir, db, config } = await usedDataDir();
    const oldHeads = readFileSync(join(dataDir, 'journal-head.json'), 'utf8');
    const lostSeq = (JSON.parse(oldHeads) as { heads: { stream: string; seq: number }[] }).heads.find(
      (h) => h.stream === 'activity',
    )?.seq;
    truncateSync(db, 0);

    const without = await runIdem(['store', 'new', '--db', db], { dataDir });
    expect(without.code).not.toBe(0);
    expect(without.stderr).toContain('--accept-lost-executions');

    const result = await runIdem(
      [
        'store',
        'new',
        '--db',
        db,
        '--accept-lost-executions',
        '--operator',
        'operator:bob',
        '--reason',
        'disk died',
        '--json',
      ],
      { dataDir },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { keptAs: string; signed: boolean };
    expect(report.signed).toBe(true);
    expect(readFileSync(join(dataDir, report.keptAs), 'utf8')).toBe(oldHeads);
    expect(readdirSync(dataDir).filter((f) => f.startsWith('journal-head.lost-'))).toEqual([report.keptAs]);

    const store = await SqliteStore.open({ path: db });
    const [first, ...rest] = await store.readJournal(0, 10);
    await store.close();
    expect(rest).toEqual([]);
    expect(first).toMatchObject({
      seq: 1,
      kind: 'store_started_anew',
      actor: 'operator:bob',
      detail: {
        by: 'operator:bob',
        via: 'cli',
        reason: 'disk died',
        lostHeads: { activity: lostSeq },
        keptAs: report.keptAs,
      },
    });
    const { report: verified } = await verifyFromFlags({
      db,
      publicKey: join(dataDir, 'journal-signing.pub'),
    });
    expect(verified.ok).toBe(true);

    const gateway = await Gateway.start(GatewayConfigSchema.parse(JSON.parse(readFileSync(config, 'utf8'))), {
      version: 'test',
      upstreamStderr: 'ignore',
    });
    await gateway.close();
  });

  it('refuses a store that is not lost, and changes nothing', async () => {
    const { dataDir, db } = await usedDataDir();
    const heads = readFileSync(join(dataDir, 'journal-head.json'), 'utf8');
    const result = await runIdem(['store', 'new', '--db', db, '--accept-lost-executions'], { dataDir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('is not lost');
    expect(readFileSync(join(dataDir, 'journal-head.json'), 'utf8')).toBe(heads);
  });
});
