import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureStdioCommand, type RunningServer, startFixture } from '../conformance/harness.js';
import { CLIENT_KINDS, type ClientKind, type ClientTarget, connectClient } from './clients.js';

/** What each client must negotiate with a server that speaks both revisions. */
const EXPECTED: Record<ClientKind, { era: 'modern' | 'legacy'; protocolVersion: string }> = {
  'v2-2026': { era: 'modern', protocolVersion: '2026-07-28' },
  'v2-auto': { era: 'modern', protocolVersion: '2026-07-28' },
  'v2-legacy': { era: 'legacy', protocolVersion: '2025-11-25' },
  // 1.10.2's LATEST_PROTOCOL_VERSION is 2024-11-05, and a server answers a version it supports as asked.
  'sdk-1.10': { era: 'legacy', protocolVersion: '2024-11-05' },
};

/**
 * The client matrix helper, directly against the dual-revision fixture over
 * HTTP and over stdio: each client negotiates what it should, lists, calls an
 * effect tool (the counter moves by one) and closes.
 */
describe('client matrix against the dual-revision fixture', () => {
  let fixture: RunningServer;
  const targets: Record<'http' | 'stdio', () => ClientTarget> = {
    http: () => ({ url: fixture.url }),
    stdio: () => fixtureStdioCommand(),
  };

  beforeAll(async () => {
    fixture = await startFixture();
  }, 60_000);
  afterAll(async () => {
    await fixture?.close();
  });

  for (const transport of ['http', 'stdio'] as const) {
    for (const kind of CLIENT_KINDS) {
      it(`${kind} over ${transport}: negotiates ${EXPECTED[kind].protocolVersion}, lists, calls, closes`, async () => {
        const client = await connectClient(kind, targets[transport]());
        try {
          expect({ era: client.era, protocolVersion: client.protocolVersion }).toEqual(EXPECTED[kind]);
          expect(await client.listTools()).toEqual(
            expect.arrayContaining(['increment_counter', 'read_counter']),
          );
          const key = `matrix-${kind}-${transport}`;
          const first = await client.callTool('increment_counter', { key });
          const second = await client.callTool('increment_counter', { key });
          expect(first.structuredContent).toEqual({ key, value: 1 });
          expect(second.structuredContent).toEqual({ key, value: 2 });
          expect(await client.callTool('test_error_handling')).toMatchObject({ isError: true });
        } finally {
          await client.close();
        }
      }, 60_000);
    }
  }

  it('a 2026-pinned client refuses a server that speaks only 2025 (no silent fallback)', async () => {
    const legacyOnly = await startFixture({ args: ['--legacy-only'] });
    try {
      await expect(connectClient('v2-2026', { url: legacyOnly.url })).rejects.toThrow();
      const auto = await connectClient('v2-auto', { url: legacyOnly.url });
      expect({ era: auto.era, protocolVersion: auto.protocolVersion }).toEqual({
        era: 'legacy',
        protocolVersion: '2025-11-25',
      });
      await auto.close();
    } finally {
      await legacyOnly.close();
    }
  }, 60_000);
});
