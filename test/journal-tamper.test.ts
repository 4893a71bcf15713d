import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportStore, verifyFromFlags } from '../src/cli/audit.js';
import { locateStore } from '../src/cli/store-access.js';
import {
  asJournalBeforeDigests,
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
