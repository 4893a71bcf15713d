import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyFromFlags } from '../src/cli/audit.js';
import { buildSqliteFixture, TAMPER_CASES, type TamperFixture, tamperedCopy } from './support/tamper.js';

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
