/**
 * `idem probe` in server mode (issue 48): a server's own tool, its effects
 * counted by a shell command, against
 * - a community server from the npm registry, @modelcontextprotocol/server-memory
 *   (its `create_entities` skips a name that exists: every retry counts 1, and
 *   the deliberate repeat is answered `done` without a second trace — a false
 *   success, as docs/probe.md shows);
 * - the tiny library server examples/probe-counter.ts (Idem in front of its
 *   `record`): every scenario counted as meant, no false answer.
 * Both run at once; each server process is started per agent session, in a
 * directory of its own, and ends with it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServerTarget, runProbe, type Scorecard } from '../../src/probe/index.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { packageBin } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

/** The scenarios a server can go through (the others need the probe's own upstream, or kill). */
const SERVER_SCENARIOS = [
  'resend',
  'again-same-session',
  'again-new-session',
  'reissue-2026',
  'concurrent-2',
  'concurrent-20',
  'deliberate-repeat',
];

async function probeServer(options: Parameters<typeof openServerTarget>[0]): Promise<Scorecard> {
  const target = openServerTarget(options);
  try {
    return await runProbe(target, { kill: true });
  } finally {
    await target.close();
  }
}

function memoryServer(): Promise<Scorecard> {
  const file = join(freshDir('probe-memory'), 'mem.jsonl');
  return probeServer({
    // env(1) sets the server's variables: this worker's own environment is left alone.
    server: {
      command: 'env',
      args: [
        `MEMORY_FILE_PATH=${file}`,
        process.execPath,
        packageBin('@modelcontextprotocol/server-memory', 'mcp-server-memory'),
      ],
    },
    tool: 'create_entities',
    args: '{"entities":[{"name":"{key}","entityType":"probe","observations":[]}]}',
    count: `grep -c '"name":"{key}"' ${file}`,
  });
}

function libraryServer(): Promise<Scorecard> {
  const dir = freshDir('probe-counter');
  const counts = join(dir, 'c.txt');
  writeFileSync(counts, '');
  return probeServer({
    server: {
      command: 'env',
      args: [
        `COUNT_FILE=${counts}`,
        `IDEM_DATA_DIR=${join(dir, 'data')}`,
        process.execPath,
        ...fixtureArgs('examples/probe-counter.ts'),
      ],
    },
    tool: 'record',
    args: '{"key":"{key}"}',
    count: `grep -cx '{key}' ${counts}`,
  });
}

let memory: Scorecard;
let library: Scorecard;

beforeAll(async () => {
  const cards = await Promise.allSettled([memoryServer(), libraryServer()]);
  const [m, l] = cards.map((c) => {
    if (c.status === 'rejected') throw c.reason;
    return c.value;
  });
  if (!m || !l) throw new Error('a scorecard is missing');
  [memory, library] = [m, l];
}, 170_000);

afterAll(removeTemporaries);

const ran = (card: Scorecard) => card.scenarios.filter((s) => !s.skipped);

describe('idem probe, server mode', () => {
  it('goes through the scenarios a server can; the others are skipped, saying why', () => {
    for (const card of [memory, library]) {
      expect(card.mode).toBe('server');
      expect(ran(card).map((s) => s.id)).toEqual(SERVER_SCENARIOS);
      for (const s of card.scenarios.filter((s) => s.skipped))
        expect(s.skipped).toMatch(/a tool the probe controls|an HTTP port/);
      expect(card.errors).toBe(0);
    }
  });

  it('@modelcontextprotocol/server-memory: retries count 1; the deliberate repeat leaves no second trace, a false success', () => {
    for (const s of ran(memory).filter((s) => s.id !== 'deliberate-repeat'))
      expect([s.id, s.countedEffects, s.falseAnswers]).toEqual([s.id, 1, 0]);
    expect(ran(memory).find((s) => s.id === 'deliberate-repeat')).toMatchObject({
      expectedEffects: 3,
      countedEffects: 2,
      missing: 1,
      answer: 'false success',
      falseAnswers: 1,
    });
    expect(memory).toMatchObject({ duplicates: 0, missing: 1, falseAnswers: 1 });
  });

  it('examples/probe-counter.ts (the Idem library): every scenario counted as meant, no false answer', () => {
    for (const s of ran(library))
      expect([s.id, s.countedEffects, s.falseAnswers]).toEqual([s.id, s.expectedEffects, 0]);
    expect(library).toMatchObject({ duplicates: 0, missing: 0, falseAnswers: 0 });
    expect(ran(library).find((s) => s.id === 'reissue-2026')?.note).toContain('2026-07-28');
  });
});
