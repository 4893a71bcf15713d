import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { claimInput } from '../../../test/support/claim-input.js';
import { useSqliteFiles } from '../../../test/support/sqlite-files.js';
import { bytesPerExecutionRow } from './row-bytes.js';
import type { SqliteStore } from './sqlite-store.js';

describe('SqliteStore', () => {
  const files = useSqliteFiles();
  const { open } = files;

  describe('row size', () => {
    /** An execution as the gateway writes one: ULID id, fp_ fingerprint, UUID session, short preview. */
    async function fill(store: SqliteStore, count: number, outcomeText: string): Promise<void> {
      for (let i = 0; i < count; i++) {
        const input = claimInput({
          actor: `user:u${i % 50}@example.com`,
          tool: ['github.create_issue', 'payments.charge', 'mail.send'][i % 3]!,
          session: crypto.randomUUID(),
          leaseOwner: `gw-${i % 4}.prod:31337`,
          argumentsPreview: JSON.stringify({ repo: 'acme/web', title: `Fix #${i}`, labels: ['bug'] }),
        });
        await store.claim(input);
        await store.transition({
          id: input.id,
          from: ['accepted'],
          to: 'dispatched',
          dispatchTimeoutMs: 30_000,
        });
        await store.transition({
          id: input.id,
          from: ['dispatched'],
          to: 'completed',
          holder: null,
          outcome: { result: { content: [{ type: 'text', text: outcomeText }] } },
        });
        await store.markDelivered(input.id);
      }
    }

    it('stays within 300 bytes per execution without the outcome', async () => {
      const store = await open();
      await fill(store, 2000, 'ok');
      const measured = store.measureRowBytes();
      const estimated = bytesPerExecutionRow(new Database(files.path, { readonly: true }), {
        method: 'length',
      });
      console.info('bytes per execution row', { measured, estimated });

      expect(measured.method).toBe('dbstat');
      expect(measured.rows).toBe(2000);
      expect(measured.bytesPerRow).toBeLessThanOrEqual(300);
      for (const key of ['bytesPerRow', 'indexBytesPerRow'] as const) {
        expect(estimated[key]).toBeGreaterThan(measured[key] * 0.85);
        expect(estimated[key]).toBeLessThan(measured[key] * 1.15);
      }
    });

    it('leaves large outcomes out of the figure', async () => {
      const store = await open();
      await fill(store, 200, 'y'.repeat(10_000));
      const measured = store.measureRowBytes();
      expect(measured.outcomeBytes).toBeGreaterThan(200 * 10_000);
      expect(measured.bytesPerRow).toBeLessThanOrEqual(300);
    });
  });
});
