import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportStore, verifyFromFlags } from '../src/cli/audit.js';
import { locateStore } from '../src/cli/store-access.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import {
  asJournalBeforeDigests,
  asJournalBeforeTrimMarks,
  buildSqliteFixture,
  TAMPER_CASES,
  type TamperFixture,
  tamperedCopy,
} from './support/tamper.js';

/**
 * Every way of tampering in test/support/tamper.ts, on a copy of a real run's
 * SQLite store: `idem audit verify` (the same function the command runs) must
 * fail, naming the first bad row or the bad execution.
 */
const root = mkdtempSync(join(tmpdir(), 'idem-tamper-'));
let fixture: TamperFixture;
beforeAll(async () => {
  fixture = await buildSqliteFixture(join(root, 'run'));
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the untouched store', () => {
  it('verifies: every stream, every execution, against the heads shipped off the host', async () => {
    const { report } = await verifyFromFlags({
      db: join(fixture.dataDir, 'idem.db'),
      publicKey: fixture.offHost.publicKey,
      heads: [fixture.offHost.heads],
    });
    expect(report.firstBad).toBeUndefined();
    expect(report.ok).toBe(true);
  });
});

describe('idem audit verify catches every tampering', () => {
  for (const [index, tamperCase] of TAMPER_CASES.entries()) {
    it(tamperCase.name, async () => {
      const copy = tamperedCopy(fixture, join(root, `case-${index}`));
      let outcome: ReturnType<typeof tamperCase.tamper>;
      try {
        outcome = tamperCase.tamper(copy);
      } finally {
        copy.close();
      }
      const flags = outcome.verify ?? { db: join(copy.dir, 'idem.db') };
      const { report } = await verifyFromFlags(flags);
      expect(report.ok).toBe(false);
      expect(report.firstBad).toMatchObject(outcome.expect);
    });
  }
});

describe('an export of the whole store', () => {
  it('carries the executions table: verify --file cross-checks it, and a forged outcome digest is found', async () => {
    const lines: string[] = [];
    const db = join(fixture.dataDir, 'idem.db');
    await exportStore(locateStore({ db }), 'all', async (line) => {
      lines.push(line);
    });
    const file = join(root, 'export.jsonl');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const intact = await verifyFromFlags({ file, publicKey: fixture.offHost.publicKey });
    expect(intact.report.ok).toBe(true);
    expect(intact.report.executions?.outcomesChecked).toBeGreaterThan(200);

    const id = fixture.ids.completed[10] as string;
    const forged = lines.map((line) =>
      line.includes(`"type":"execution","id":"${id}"`)
        ? line.replace(/"outcomeSha256":"[0-9a-f]+"/, `"outcomeSha256":"${'0'.repeat(64)}"`)
        : line,
    );
    writeFileSync(file, `${forged.join('\n')}\n`);
    const { report } = await verifyFromFlags({ file, publicKey: fixture.offHost.publicKey });
    expect(report.firstBad).toMatchObject({ executionId: id, problem: 'outcome_mismatch' });
  });
});

describe('a journal written before outcome digests', () => {
  it('still verifies (results checked by state only), and a forged state is still found', async () => {
    const copy = tamperedCopy(fixture, join(root, 'before-digests'));
    try {
      asJournalBeforeDigests(copy.db);
    } finally {
      copy.close();
    }
    // Its heads and key belong to the chain before the re-hash: this store predates signing.
    for (const file of ['journal-head.json', 'journal-signing.pub', 'journal-signing.key'])
      rmSync(join(copy.dir, file));
    const db = join(copy.dir, 'idem.db');
    const { report } = await verifyFromFlags({ db });
    expect(report.firstBad).toBeUndefined();
    expect(report.executions).toMatchObject({ outcomesChecked: 0 });
    expect(report.executions?.outcomesUnchecked).toBeGreaterThan(200);

    const forged = tamperedCopy({ ...fixture, dataDir: copy.dir }, join(root, 'before-digests-forged'));
    forged.db.prepare("UPDATE executions SET state = 'completed' WHERE id = ?").run(fixture.ids.unknown);
    forged.close();
    const after = await verifyFromFlags({ db: join(forged.dir, 'idem.db') });
    expect(after.report.firstBad).toMatchObject({
      executionId: fixture.ids.unknown,
      problem: 'state_mismatch',
    });
  });
});

const RETENTION_MS = 48 * 3_600_000;

/** A copy of the run, swept as the gateway sweeps: its clock at `at`, the default retention. */
async function sweptCopy(name: string, at: (db: SqliteStore) => Promise<number>): Promise<string> {
  const dir = join(root, name);
  cpSync(fixture.dataDir, dir, { recursive: true });
  const path = join(dir, 'idem.db');
  const probe = await SqliteStore.open({ path });
  const now = await at(probe);
  await probe.close();
  const store = await SqliteStore.open({ path, clock: () => now });
  try {
    expect((await store.sweep({ retentionMs: RETENTION_MS })).trimmed).toBeGreaterThan(0);
  } finally {
    await store.close();
  }
  return dir;
}

/** When execution `id` last changed, by the store's clock. */
const finishedAt = async (store: SqliteStore, id: string) => (await store.get(id))?.updatedAt as number;

describe('a retention trim is journaled, so a deletion inside retention is not taken for one', () => {
  it('a real sweep past retention verifies, every trimmed execution named by a trimmed event', async () => {
    const dir = await sweptCopy('swept-all', async (store) => (await store.now()) + RETENTION_MS + 60_000);
    const { report } = await verifyFromFlags({
      db: join(dir, 'idem.db'),
      publicKey: fixture.offHost.publicKey,
      heads: [fixture.offHost.heads],
    });
    expect(report.firstBad).toBeUndefined();
    // Every completed one, the failed, the denied and the operator-resolved.
    expect(report.executions).toMatchObject({
      trimmed: fixture.ids.completed.length + 3,
      trimmedUnrecorded: 0,
    });
  });

  it('after a real sweep, the oldest execution kept deleted (what the next trim would take first) fails, named', async () => {
    const middle = fixture.ids.completed[100] as string;
    const dir = await sweptCopy(
      'swept-half',
      async (store) => (await finishedAt(store, middle)) + RETENTION_MS,
    );
    const path = join(dir, 'idem.db');
    expect((await verifyFromFlags({ db: path })).report.firstBad).toBeUndefined();

    const oldestKept = fixture.ids.completed[101] as string;
    const copy = tamperedCopy({ ...fixture, dataDir: dir }, join(root, 'swept-half-deleted'));
    copy.db.prepare('DELETE FROM executions WHERE id = ?').run(oldestKept);
    copy.close();
    const { report } = await verifyFromFlags({ db: join(copy.dir, 'idem.db') });
    expect(report.firstBad).toMatchObject({ problem: 'execution_missing', executionId: oldestKept });
    expect(report.firstBad?.message).toContain('no trim recorded it');
  });

  it('a journal written before trims were journaled keeps verifying by the older rule (oldest first)', async () => {
    const copy = tamperedCopy(fixture, join(root, 'before-trim-marks'));
    try {
      asJournalBeforeTrimMarks(copy.db);
      // A trim then did not journal: the oldest finished execution gone is taken for one.
      copy.db.prepare('DELETE FROM executions WHERE id = ?').run(fixture.ids.completed[0]);
    } finally {
      copy.close();
    }
    for (const file of ['journal-head.json', 'journal-signing.pub', 'journal-signing.key'])
      rmSync(join(copy.dir, file));
    const { report } = await verifyFromFlags({ db: join(copy.dir, 'idem.db') });
    expect(report.firstBad).toBeUndefined();
    expect(report.executions).toMatchObject({ trimmed: 1, trimmedUnrecorded: 1 });

    const later = tamperedCopy({ ...fixture, dataDir: copy.dir }, join(root, 'before-trim-marks-later'));
    later.db.prepare('DELETE FROM executions WHERE id = ?').run(fixture.ids.completed[30]);
    later.close();
    const after = await verifyFromFlags({ db: join(later.dir, 'idem.db') });
    expect(after.report.firstBad).toMatchObject({
      problem: 'execution_missing',
      executionId: fixture.ids.completed[30],
    });
  });
});
