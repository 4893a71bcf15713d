import { spawn } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { claimInput, newFingerprint } from '../../../test/support/claim-input.js';
import { chainProblems } from '../../../test/support/journal-chains.js';
import { useSqliteFiles } from '../../../test/support/sqlite-files.js';
import { openStore } from '../index.js';
import { SqliteStore } from './sqlite-store.js';

describe('SqliteStore', () => {
  const files = useSqliteFiles();
  const { open, raw, opened } = files;

  describe('the file', () => {
    it('runs in WAL mode, durable by default (the connection commits with NORMAL; group commit syncs the WAL) and a busy timeout', async () => {
      const db = raw();
      opened.pop();
      const store = new SqliteStore(db);
      opened.push(store);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('synchronous', { simple: true })).toBe(1);
      expect(store.synchronous()).toBe('full');
      await store.claim(claimInput());
      expect(store.commitStats()).toMatchObject({ commits: 1, synced: 1 });
      expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
      expect(store.kind).toBe('sqlite');
    });

    it('trades that for speed only when asked: synchronous "normal"', async () => {
      const store = await open({ synchronous: 'normal' });
      expect(store.synchronous()).toBe('normal');
      await expect(open({ synchronous: 'off' as 'normal' })).rejects.toThrow(/synchronous must be/);
    });

    it('is created 0600, and so are its -wal and -shm files', async () => {
      const store = await open();
      await store.claim(claimInput());
      for (const file of [files.path, `${files.path}-wal`, `${files.path}-shm`]) {
        expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
      }
    });

    it('keeps executions and the journal across a reopen, and the chain continues', async () => {
      const first = await SqliteStore.open({ path: files.path });
      const input = claimInput();
      await first.claim(input, { events: [{ kind: 'accepted', executionId: input.id }] });
      const outcome = { result: { content: [{ type: 'text' as const, text: 'done ✓' }] } };
      const done = await first.transition({ id: input.id, from: ['accepted'], to: 'completed', outcome });
      await first.close();

      const second = await open();
      const { readAt: _a, ...before } = done!;
      const { readAt: _b, ...after } = (await second.get(input.id))!;
      expect(after).toEqual(before);
      expect((await second.findActive(input.fingerprint))?.id).toBe(input.id);
      expect((await second.claim(claimInput({ fingerprint: input.fingerprint }))).won).toBe(false);
      await second.appendEvents([{ kind: 'delivered', executionId: input.id }]);
      const journal = await second.readJournal();
      expect(journal.map((e) => e.kind)).toEqual(['accepted', 'delivered']);
      expect(chainProblems(journal)).toEqual([]);
    });

    it('stores an fp_ fingerprint as 32 bytes and keeps any other spelling verbatim', async () => {
      const store = await open();
      const canonical = newFingerprint();
      // Same bytes as some canonical fingerprint, but the last character's spare bits are set.
      const lastIsA = `fp_${Buffer.alloc(32).toString('base64url')}`;
      const nonCanonical = `${lastIsA.slice(0, -1)}B`;
      const odd = ['fp_short', 'sha256:abc', nonCanonical];
      for (const fp of [canonical, lastIsA, ...odd]) {
        const input = claimInput({ fingerprint: fp });
        expect((await store.claim(input)).won).toBe(true);
        expect((await store.get(input.id))?.fingerprint).toBe(fp);
        expect((await store.findActive(fp))?.id).toBe(input.id);
      }
      const db = raw({ readonly: true });
      const types = db
        .prepare<[], { type: string; size: number }>(
          'SELECT typeof(fingerprint) AS type, length(fingerprint) AS size FROM executions ORDER BY id',
        )
        .all();
      expect(types).toEqual([
        { type: 'blob', size: 32 },
        { type: 'blob', size: 32 },
        { type: 'text', size: 8 },
        { type: 'text', size: 10 },
        { type: 'text', size: 46 },
      ]);
    });
  });

  describe('several processes on one file', () => {
    it('two stores on one file give exactly one winner of 200 concurrent claims', async () => {
      const [a, b] = [await open(), await open()];
      const fp = newFingerprint();
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => {
          const input = claimInput({ fingerprint: fp });
          return (i % 2 ? a : b).claim(input, { events: [{ kind: 'accepted', executionId: input.id }] });
        }),
      );
      expect(results.filter((r) => r.won)).toHaveLength(1);
      const winner = results.find((r) => r.won)!.record!.id;
      expect(results.every((r) => r.record?.id === winner)).toBe(true);
      expect((await a.findActive(fp))?.id).toBe(winner);
      expect((await b.readJournal()).map((e) => e.executionId)).toEqual([winner]);
    });

    it('real processes racing on one file: one winner per fingerprint and one valid journal chain', async () => {
      await (await open()).close();
      const fingerprints = Array.from({ length: 100 }, newFingerprint);
      const storeModule = new URL('./sqlite-store.ts', import.meta.url).href;
      // .mts: the temp dir has no package.json to make a .ts file an ES module.
      const script = join(files.dir, 'claimer.mts');
      writeFileSync(
        script,
        `
        import { randomBytes } from 'node:crypto';
        import { SqliteStore } from ${JSON.stringify(storeModule)};
        const [path, who, list] = process.argv.slice(2);
        const store = await SqliteStore.open({ path });
        process.stdout.write('ready\\n');
        await new Promise((resolve) => process.stdin.once('data', resolve));
        const won = [];
        // Each process walks the list in its own order, so they meet on every fingerprint.
        const order = JSON.parse(list).sort(() => Math.random() - 0.5);
        for (const fingerprint of order) {
          const id = 'exe_' + Date.now().toString(36) + randomBytes(10).toString('hex');
          const result = await store.claim(
            { id, fingerprint, actor: 'a', tool: 't', session: null, replay: 'keyed', state: 'accepted',
              attachWindowMs: 60000, claimToken: who, leaseOwner: who, leaseMs: 60000, argumentsPreview: '{}' },
            { events: [{ kind: 'accepted', executionId: id, detail: { who } }] },
          );
          if (result.won) won.push(fingerprint);
          // A pause between claims; without it the busy handler's backoff lets one process take every lock.
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
        }
        await store.close();
        process.stdout.write(JSON.stringify(won) + '\\n');
        `,
      );
      const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
      const children = Array.from({ length: 4 }, (_, i) => {
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', script, files.path, `p${i}`, JSON.stringify(fingerprints)],
          {
            cwd: repoRoot,
            stdio: ['pipe', 'pipe', 'inherit'],
          },
        );
        let out = '';
        child.stdout.setEncoding('utf8');
        const ready = new Promise<void>((resolve, reject) => {
          child.stdout.on('data', (chunk: string) => {
            out += chunk;
            if (out.startsWith('ready\n')) resolve();
          });
          child.on('exit', () => reject(new Error(`claimer ${i} exited before it was ready`)));
        });
        const done = new Promise<string[]>((resolve, reject) => {
          child.on('error', reject);
          child.on('exit', (code) => {
            if (code !== 0) reject(new Error(`claimer ${i} exited with ${code}`));
            else resolve(JSON.parse(out.slice('ready\n'.length)));
          });
        });
        return { child, ready, done };
      });
      await Promise.all(children.map((c) => c.ready));
      for (const { child } of children) child.stdin.end('go\n');
      const wins = (await Promise.all(children.map((c) => c.done))).flat();

      expect(wins.sort()).toEqual([...fingerprints].sort());
      const store = await open();
      const journal = await store.readJournal();
      expect(journal).toHaveLength(fingerprints.length);
      expect(chainProblems(journal)).toEqual([]);
      for (const fp of fingerprints) expect(await store.findActive(fp)).toBeDefined();
    });
  });

  it('openStore opens each kind', async () => {
    const memory = await openStore({ kind: 'memory' });
    const sqlite = await openStore({ kind: 'sqlite', path: files.path });
    opened.push(memory, sqlite);
    expect([memory.kind, sqlite.kind]).toEqual(['memory', 'sqlite']);
    expect((await sqlite.claim(claimInput())).won).toBe(true);
  });
});
