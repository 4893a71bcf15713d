import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, describe, expect, it } from 'vitest';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { REPO_ROOT } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';

afterAll(() => removeTemporaries());

/**
 * A server built with the library (examples/charge-card.ts: `idem.connect`
 * over stdio, an SDK 1.x McpServer) serves a 2026-07-28 client too: the
 * connection is pinned to that revision by its first request, and the
 * intent layer keeps a re-issued call from charging twice.
 */
describe('library over stdio, a 2026-07-28 client', () => {
  it.each([{ pin: '2026-07-28' }, 'auto'] as const)(
    '%j: discover, list, call; the same call again is answered from its execution, as a replay',
    async (mode) => {
      const client = new Client(
        { name: 'revisions-lib', version: '1.0.0' },
        { versionNegotiation: { mode } as never },
      );
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [...fixtureArgs('examples/charge-card.ts')],
          cwd: REPO_ROOT,
          env: { ...(process.env as Record<string, string>), IDEM_DATA_DIR: freshDir('lib-revisions') },
          stderr: 'ignore',
        }),
      );
      try {
        expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
        expect((await client.listTools()).tools.map((t) => t.name)).toEqual(
          expect.arrayContaining(['charge_card', 'idem_execution_status']),
        );
        const args = { order_id: 'o-7', amount_cents: 1200, card_number: '4000056655665556' };
        const first = await client.callTool({ name: 'charge_card', arguments: args });
        const again = await client.callTool({ name: 'charge_card', arguments: args });
        expect(textOf(first)).toMatch(/o-7/);
        expect(textOf(again)).toBe(textOf(first));
        expect((again as { _meta?: Record<string, unknown> })._meta?.['io.idem/replayed']).toBe(true);
      } finally {
        await client.close();
      }
    },
  );
});
