/**
 * Issue 44, item 8 (second part): an export of one stream (`idem audit
 * export --stream activity`), untouched, verified against the store's signed
 * heads (`--head journal-head.json`, which has both streams' heads) was
 * reported TAMPERED — the sessions journal "truncated" — because verify
 * judged it on both streams. An export now says what it holds in its first
 * line; verify judges it on that, says what it did not check, and still
 * catches what it always caught: a cut in the stream it holds, and a cut of
 * the other stream out of an export of every stream.
 *
 * A real SQLite store with both journals, the CLI as its own process.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { runIdem } from './support/run-cli.js';
import { freshDir, removeTemporaries } from './support/temp-dirs.js';

const dir = freshDir('export-streams');
const db = join(dir, 'idem.db');
const heads = join(dir, 'journal-head.json');
const idem = (...args: string[]) => runIdem(args, { dataDir: dir });

beforeAll(async () => {
  const store = await SqliteStore.open({ path: db });
  for (let i = 0; i < 20; i++) {
    await store.appendEvents([
      { kind: 'received', actor: 'token:alice', tool: 'charge', requestRef: `r${i}` },
    ]);
    await store.appendEvents(
      [{ kind: 'session_start', actor: 'token:alice', requestRef: `s${i}` }],
      'sessions',
    );
  }
  await store.close();
  expect((await idem('audit', 'sign', '--db', db)).code).toBe(0);
}, 60_000);
afterAll(removeTemporaries);

async function exported(name: string, stream: string): Promise<string> {
  const out = join(dir, name);
  const result = await idem('audit', 'export', '--db', db, '--stream', stream, '--out', out);
  expect(result.code, result.stderr).toBe(0);
  return out;
}

/** A copy of an export without the lines `drop` picks. */
function without(path: string, name: string, drop: (line: string) => boolean): string {
  const copy = join(dir, name);
  writeFileSync(
    copy,
    readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => !drop(l))
      .join('\n'),
  );
  return copy;
}

describe('verifying an export of one stream (issue 44, item 8)', () => {
  it("untouched, against both streams' signed heads: OK on its stream, and says what it did not check", async () => {
    const activity = await exported('activity.jsonl', 'activity');
    const result = await idem('audit', 'verify', '--file', activity, '--head', heads);
    expect(result.stdout).not.toContain('TAMPERED');
    expect(result.stdout).toContain('OK: 20 activity entries');
    expect(result.stdout).toContain('NOT CHECKED: the sessions journal');
    expect(result.stdout).toContain('NOT CHECKED: the executions table');
    expect(result.code).toBe(0);
    // It says so in its first line.
    expect(JSON.parse(readFileSync(activity, 'utf8').split('\n')[0] as string)).toEqual({
      type: 'export',
      streams: ['activity'],
      executions: false,
    });
    const json = JSON.parse(
      (await idem('audit', 'verify', '--file', activity, '--head', heads, '--json')).stdout,
    );
    expect(json).toMatchObject({ ok: true, notCovered: ['the sessions journal', 'the executions table'] });

    // Asked for a stream it does not hold: that cannot be checked (exit 2), not passed.
    const sessions = await idem(
      'audit',
      'verify',
      '--file',
      activity,
      '--head',
      heads,
      '--stream',
      'sessions',
    );
    expect(sessions.stderr).toContain('does not hold the sessions journal');
    expect(sessions.code).toBe(2);
  });

  it('still catches a cut in the stream it holds, and a stream cut out of an export of every stream', async () => {
    const activity = await exported('activity-cut.jsonl', 'activity');
    const cut = without(activity, 'activity-cut-tail.jsonl', (l) => l.includes('"seq":20,'));
    const truncated = await idem('audit', 'verify', '--file', cut, '--head', heads);
    expect(truncated.stdout).toMatch(/TAMPERED: first bad seq 20 \(truncated\) in the activity journal/);
    expect(truncated.code).toBe(1);

    const all = await exported('all.jsonl', 'all');
    const noSessions = without(
      all,
      'all-no-sessions.jsonl',
      (l) => l.includes('"stream":"sessions"') && l.includes('"type":"entry"'),
    );
    const caught = await idem('audit', 'verify', '--file', noSessions, '--head', heads);
    expect(caught.stdout).toMatch(/TAMPERED: .*\(truncated\) in the sessions journal/);
    expect(caught.code).toBe(1);
  });
});
