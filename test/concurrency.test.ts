import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveContract } from '../src/contracts/contract.js';
import { idemCodeOf } from '../src/executions/answers.js';
import type { ToolCall } from '../src/executions/call.js';
import { ExecutionEngine } from '../src/executions/engine.js';
import { Fingerprinter } from '../src/identity/fingerprint.js';
import { MemoryStore } from '../src/store/memory/memory-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { ExecutionStore } from '../src/store/types.js';
import { CountingTarget } from './support/counting-target.js';
import { Gate } from './support/gate.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-concurrency-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fingerprinter = new Fingerprinter(randomBytes(32));

const call: ToolCall = {
  tool: 'deploy',
  channel: 'library',
  target: 'local',
  credentialRef: null,
  method: 'tools/call',
  arguments: { service: 'billing', version: '2026.11.29' },
  contract: resolveContract({ replay: 'keyed', scope: { business_key: 'version' } }, undefined),
  caller: { actor: 'token:ci', session: null },
};

const done = (n: number) => ({
  content: [{ type: 'text' as const, text: `done #${n}` }],
  structuredContent: { n },
});

const stores: [string, () => Promise<ExecutionStore[]>][] = [
  ['memory', async () => [new MemoryStore()]],
  ['sqlite', async () => [await SqliteStore.open({ path: join(dir, 'one.db') })]],
  [
    'sqlite, two connections on one file',
    async () => [
      await SqliteStore.open({ path: join(dir, 'two.db') }),
      await SqliteStore.open({ path: join(dir, 'two.db') }),
    ],
  ],
];

describe.each(stores)('200 concurrent identical calls on %s', (_name, open) => {
  it('invoke the target exactly once; everyone else is told it is in flight', async () => {
    const opened = await open();
    const engines = opened.map((store) => new ExecutionEngine({ store, fingerprinter }));
    // The winner's target answers once the 199 others have been answered: each of them met the
    // execution in flight, however slowly the machine let them arrive (a fixed delay raced them).
    const othersAnswered = new Gate();
    const target = new CountingTarget({ respond: (n) => othersAnswered.wait().then(() => done(n)) });
    let answered = 0;
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        (engines[i % engines.length] as ExecutionEngine).execute(call, target.dispatch).then((result) => {
          if (++answered === 199) othersAnswered.open();
          return result;
        }),
      ),
    );
    expect(target.invocations).toBe(1);
    const codes = results.map((r) => idemCodeOf(r) ?? 'result');
    expect(codes.filter((c) => c === 'result')).toHaveLength(1);
    expect(codes.filter((c) => c === 'IDEM_IN_FLIGHT')).toHaveLength(199);
    const replay = await (engines[0] as ExecutionEngine).execute(call, target.dispatch);
    expect(replay._meta?.['io.idem/replayed']).toBe(true);
    expect(target.invocations).toBe(1);
    for (const store of opened) await store.close();
  });
});
