import { chmodSync, closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreRefusedError } from '../src/errors.js';
import { GatewayConfigSchema } from '../src/gateway/config/index.js';
import { Gateway } from '../src/gateway/gateway.js';
import { SqliteStore } from '../src/store/sqlite/index.js';
import { readExecutions } from './gateway/fixtures/counting-server.js';
import { fillWithCompleted } from './support/claim-input.js';
import { countingUpstream } from './support/counting-upstream.js';
import { runIdem, unprivilegedUser } from './support/run-cli.js';
import { freshDir, removeTemporaries } from './support/temp-dirs.js';

/**
 * A damaged or unwritable SQLite store, met the way an operator meets it:
 * `idem executions list` and `idem gateway` on a real file, damaged on disk
 * after the store was written and closed. Each refuses with the file's name,
 * what is wrong and what to do; no gateway starts, so nothing is dispatched.
 */
afterAll(removeTemporaries);

const PAGE_SIZE = 4096;

/** A data directory whose idem.db holds `count` completed executions, closed; its executions table's first leaf page. */
async function dataDirWithStore(count = 150): Promise<{ dataDir: string; db: string; leafPage: number }> {
  const dataDir = freshDir('damaged');
  const db = join(dataDir, 'idem.db');
  const store = await SqliteStore.open({ path: db });
  await fillWithCompleted(store, count, (i) => `deployed build ${i}`);
  await store.close();
  const raw = new Database(db, { readonly: true });
  const leaf = raw
    .prepare<[], { pageno: number }>(
      "SELECT pageno FROM dbstat WHERE name = 'executions' AND pagetype = 'leaf' ORDER BY pageno LIMIT 1",
    )
    .get()!.pageno;
  raw.close();
  return { dataDir, db, leafPage: leaf };
}

/** Flips the header of one table page: its type and cell count become nonsense. */
function damagePage(db: string, page: number): void {
  const fd = openSync(db, 'r+');
  writeSync(fd, Buffer.alloc(8, 0xff), 0, 8, (page - 1) * PAGE_SIZE);
  closeSync(fd);
}

function gatewayConfig(dataDir: string, counts: string) {
  return {
    data_dir: dataDir,
    upstreams: { counter: countingUpstream(counts) },
    tools: { count: { replay: 'status' } },
  };
}

describe('a damaged SQLite store', () => {
  it('makes `idem executions list` fail with the file, the damage and the way out', async () => {
    const { dataDir, db, leafPage } = await dataDirWithStore();
    damagePage(db, leafPage);

    const result = await runIdem(['executions', 'list', '--db', db], { dataDir });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`refused the SQLite store at ${db} (corrupt)`);
    expect(result.stderr).toContain(`sqlite3 ${db}.damaged .recover | sqlite3 ${db}`);
  });

  it('stops `idem gateway` from starting: it exits 1 with the reason, and the upstream never runs', async () => {
    const { dataDir, db, leafPage } = await dataDirWithStore();
    damagePage(db, leafPage);
    const counts = freshDir('counts');
    const config = join(dataDir, 'idem.json');
    writeFileSync(config, JSON.stringify(gatewayConfig(dataDir, counts)));

    // A gateway that starts listens until killed: the timeout turns that into a failure here.
    const result = await runIdem(['gateway', '--config', config, '--listen', '127.0.0.1:0'], {
      dataDir,
      timeoutMs: 30_000,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`refused the SQLite store at ${db} (corrupt)`);
    expect(result.stderr).not.toMatch(/Streamable HTTP on/);
    expect(readExecutions(counts)).toEqual([]);
  });

  it('makes Gateway.start reject with StoreRefusedError, for a file that is not SQLite at all', async () => {
    const dataDir = freshDir('not-sqlite');
    writeFileSync(join(dataDir, 'idem.db'), '{"executions": []}\n'.repeat(300));
    const counts = freshDir('counts');
    const started = Gateway.start(GatewayConfigSchema.parse(gatewayConfig(dataDir, counts)), {
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
    expect((error as StoreRefusedError).reason).toBe('not_a_database');
    expect((error as StoreRefusedError).path).toBe(join(dataDir, 'idem.db'));
  });
});

describe('a store the user cannot write', () => {
  it('is refused by `idem executions list` and `idem gateway`, saying how to give access', async () => {
    const { dataDir, db } = await dataDirWithStore(20);
    const counts = freshDir('counts');
    const config = join(dataDir, 'idem.json');
    writeFileSync(config, JSON.stringify(gatewayConfig(dataDir, counts)));
    chmodSync(db, 0o444);
    chmodSync(dataDir, 0o555);
    chmodSync(counts, 0o777);
    // freshDir's parent is the system temp directory; the unprivileged user can enter it.
    const user = unprivilegedUser();

    try {
      const list = await runIdem(['executions', 'list', '--db', db], { dataDir, ...(user ? { user } : {}) });
      expect(list.code).toBe(1);
      expect(list.stderr).toContain(`refused the SQLite store at ${db} (read_only)`);
      expect(list.stderr).toContain('write access');

      const gateway = await runIdem(['gateway', '--config', config, '--listen', '127.0.0.1:0'], {
        dataDir,
        timeoutMs: 30_000,
        ...(user ? { user } : {}),
      });
      expect(gateway.code).toBe(1);
      expect(gateway.stderr).toContain(`refused the SQLite store at ${db} (read_only)`);
      expect(readExecutions(counts)).toEqual([]);
    } finally {
      chmodSync(dataDir, 0o755);
      mkdirSync(dataDir, { recursive: true });
    }
  });
});
