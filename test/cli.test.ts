import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveContract } from '../src/contracts/contract.js';
import { OutcomeUnknownError } from '../src/errors.js';
import type { ToolCall } from '../src/executions/call.js';
import { ExecutionEngine } from '../src/executions/engine.js';
import { Fingerprinter } from '../src/identity/fingerprint.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { deadDispatch } from './support/claim-input.js';
import { runIdem } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-cli-'));
const db = join(dir, 'idem.db');
const refs: Record<string, string> = {};

const idem = (...args: string[]) => runIdem([...args, '--db', db], { dataDir: dir });
const json = async (...args: string[]) => JSON.parse((await idem(...args, '--json')).stdout);

beforeAll(async () => {
  // Everything is recorded a minute ago by the store's clock: the dead dispatch's lease is long over
  // by the host's clock, which the CLI's sweep reads, without waiting for it.
  const store = await SqliteStore.open({ path: db, clock: () => Date.now() - 60_000 });
  const engine = new ExecutionEngine({ store, fingerprinter: new Fingerprinter(randomBytes(32)) });
  const call = (tool: string, args: object, replay: 'keyed' | 'review', requestRef: string): ToolCall => ({
    tool,
    channel: 'mcp',
    target: 'up',
    credentialRef: null,
    method: 'tools/call',
    arguments: args,
    contract: resolveContract({ replay, lease: 50 }, undefined),
    caller: { actor: 'token:alice', session: 'ses-1', requestRef },
  });
  const done = await engine.execute(call('deploy', { v: 1 }, 'keyed', 'req-1'), async () => ({
    content: [{ type: 'text', text: 'deployed' }],
  }));
  await engine.execute(call('deploy', { v: 1 }, 'keyed', 'req-2'), async () => ({ content: [] })); // a retry attaches
  refs.completed = done._meta?.['io.idem/execution-id'] as string;
  const lost = await engine.execute(call('wire_money', { amount: 5 }, 'review', 'req-3'), async () => {
    throw new OutcomeUnknownError('timeout after send');
  });
  refs.unknown = (lost.structuredContent as { idem: { ref: string } }).idem.ref;
  // A dispatch whose process died: stale for the sweeper.
  await store.claim(deadDispatch({ id: 'exe_stale', actor: 'token:bob', tool: 'deploy' }));
  await store.appendEvents(
    [
      {
        kind: 'session_start',
        actor: 'token:alice',
        requestRef: 'ses-1',
        detail: { client: { name: 'claude-code', version: '2.1' }, protocol_version: '2025-11-25' },
      },
    ],
    'sessions',
  );
  await store.close();
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('idem executions', () => {
  it('list, with filters', async () => {
    const all = (await json('executions', 'list')) as { id: string; state: string }[];
    expect(all.map((r) => r.state).sort()).toEqual(['completed', 'dispatched', 'unknown']);
    expect(
      ((await json('executions', 'list', '--state', 'unknown')) as { id: string }[]).map((r) => r.id),
    ).toEqual([refs.unknown]);
    expect(
      ((await json('executions', 'list', '--tool', 'deploy', '--actor', 'token:alice')) as unknown[]).length,
    ).toBe(1);
    const table = await idem('executions', 'list');
    expect(table.stdout).toMatch(/^REF\s+STATE\s+TOOL/);
    expect((await idem('executions', 'list', '--state', 'bogus')).code).toBe(2);
  });

  it('--limit takes a whole number of at least 1: "abc", "-1" and "0" are usage errors, not "no limit"', async () => {
    const refused = [
      ['executions', 'abc'],
      ['executions', '-1'],
      ['executions', '0'],
      ['sessions', '2.5'],
      ['approvals', '-1'],
    ];
    const results = await Promise.all(
      refused.map(([command, limit]) => idem(command as string, 'list', '--limit', limit as string)),
    );
    for (const [i, result] of results.entries()) {
      const [command, limit] = refused[i] as [string, string];
      expect(result.code, `${command} list --limit ${limit}`).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(
        `argument '${limit}' is invalid. Expected a whole number of at least 1`,
      );
    }
    expect(((await json('executions', 'list', '--limit', '1')) as unknown[]).length).toBe(1);
  });

  it('tables and --json say the same instant: ISO 8601 in UTC, the zone written out', async () => {
    const [record] = (await json('executions', 'list', '--state', 'completed')) as { createdAt: string }[];
    expect(record?.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const table = await idem('executions', 'list', '--state', 'completed');
    expect(table.stdout).toContain(String(record?.createdAt).replace('T', ' '));
    const shown = (await json('executions', 'show', refs.completed as string)) as {
      timeline: { at: unknown }[];
    };
    expect(shown.timeline.every((e) => typeof e.at === 'string' && e.at.endsWith('Z'))).toBe(true);
  });

  it('show: one execution with two requests attached is one execution, and its timeline says so', async () => {
    const shown = (await json('executions', 'show', refs.completed as string)) as {
      execution: { state: string };
      requests: string[];
      timeline: { kind: string }[];
    };
    expect(shown.execution.state).toBe('completed');
    expect(shown.requests).toEqual(['req-1', 'req-2']);
    expect(shown.timeline.map((e) => e.kind)).toEqual([
      'received',
      'accepted',
      'dispatched',
      'outcome',
      'delivered',
      'attached',
    ]);
  });

  it('resolve: the operator answers an unknown outcome, journaled with who; a finished one cannot be resolved', async () => {
    const resolved = await idem(
      'executions',
      'resolve',
      refs.unknown as string,
      '--as',
      'failed',
      '--note',
      'bank says no transfer',
      '--operator',
      'operator:dana',
    );
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toContain('unknown → failed');
    const shown = (await json('executions', 'show', refs.unknown as string)) as {
      execution: { state: string; note: string };
      timeline: { kind: string; detail: Record<string, string> }[];
    };
    expect(shown.execution).toMatchObject({ state: 'failed', note: 'bank says no transfer' });
    expect(shown.timeline.at(-1)).toMatchObject({
      kind: 'operator_resolution',
      detail: { by: 'operator:dana', as: 'failed' },
    });
    const refused = await idem(
      'executions',
      'resolve',
      refs.completed as string,
      '--as',
      'failed',
      '--note',
      'x',
    );
    // The command ran and was refused: an operational failure (1), not a usage error (2).
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('is completed');
  });
});

describe('idem sessions', () => {
  it('lists agent runs from the sessions journal', async () => {
    const sessions = (await json('sessions', 'list')) as {
      session: string;
      client: string;
      protocol: string;
    }[];
    expect(sessions).toEqual([
      expect.objectContaining({ session: 'ses-1', client: 'claude-code 2.1', protocol: '2025-11-25' }),
    ]);
    const shown = (await json('sessions', 'show', 'ses-1')) as { executions: unknown[] };
    expect(shown.executions.length).toBe(2);
  });

  it('list and show have help of their own', async () => {
    const help = await idem('sessions', '--help');
    expect(help.stdout).toMatch(/list \[options\]\s+Agent runs, newest first/);
    expect(help.stdout).toMatch(/show \[options\] <session>\s+One agent run/);
    expect((await idem('sessions', 'show', '--help')).stdout).toContain(
      'session id (from idem sessions list)',
    );
  });
});

describe('idem sweep', () => {
  it('--dry-run reports the stale dispatch and changes nothing; then the sweep turns it unknown', async () => {
    const preview = (await json('sweep', '--dry-run')) as { expired: { id: string }[] };
    expect(preview.expired.map((r) => r.id)).toEqual(['exe_stale']);
    expect(((await json('executions', 'list', '--state', 'dispatched')) as unknown[]).length).toBe(1);
    const swept = (await json('sweep')) as { expired: { id: string }[] };
    expect(swept.expired.map((r) => r.id)).toEqual(['exe_stale']);
    expect(
      ((await json('executions', 'list', '--state', 'unknown')) as { id: string }[]).map((r) => r.id),
    ).toEqual(['exe_stale']);
  });
});

describe('options every command spells one way (docs/adr/0032-cli-conventions.md)', () => {
  const storeCommands = [
    ['executions', 'list'],
    ['executions', 'show'],
    ['executions', 'resolve'],
    ['approvals', 'list'],
    ['approvals', 'show'],
    ['approvals', 'approve'],
    ['approvals', 'deny'],
    ['sessions', 'list'],
    ['sessions', 'show'],
    ['sweep'],
    ['store', 'new'],
    ['audit', 'verify'],
    ['audit', 'export'],
    ['audit', 'sign'],
    ['console'],
  ];

  it('every command that opens the store takes --db and --config, with the same help', async () => {
    const helps = await Promise.all(storeCommands.map((command) => idem(...command, '--help')));
    // Commander wraps the text at the width of the longest option, so compare it unwrapped.
    const helpOf = (text: string, option: string) =>
      new RegExp(`${option}\\s+(.*(?:\\n {20,}.*)*)`).exec(text)?.[1]?.replace(/\s+/g, ' ');
    for (const [i, help] of helps.entries()) {
      const command = storeCommands[i]!.join(' ');
      expect(helpOf(help.stdout, '--db <file\\|postgres-url>'), command).toBe(
        'the store: a SQLite file or a postgres:// URL (default: --config, IDEM_STORE_URL, or the data directory)',
      );
      expect(helpOf(help.stdout, '-c, --config <file>'), command).toBe(
        "an idem.yaml to read the store's location from",
      );
    }
  });

  it('who the operator is: --operator; --by, its old spelling, still works, hidden, and not with it', async () => {
    const helps = await Promise.all(
      [
        ['executions', 'resolve'],
        ['approvals', 'approve'],
        ['approvals', 'deny'],
        ['store', 'new'],
      ].map((command) => idem(...command, '--help')),
    );
    for (const help of helps) {
      expect(help.stdout).toContain('--operator <name>');
      expect(help.stdout).not.toContain('--by');
    }
    const both = await idem(
      'executions',
      'resolve',
      'exe_stale',
      '--as',
      'failed',
      '--note',
      'n',
      '--operator',
      'a',
      '--by',
      'b',
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("option '--by <name>' cannot be used with option '--operator <name>'");
    // The sweep above made the stale dispatch unknown: resolved here under the old spelling.
    const resolved = await idem(
      'executions',
      'resolve',
      'exe_stale',
      '--as',
      'failed',
      '--note',
      'n',
      '--by',
      'operator:erin',
    );
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toContain('(by operator:erin)');
    const shown = (await json('executions', 'show', 'exe_stale')) as {
      timeline: { kind: string; detail: object }[];
    };
    expect(shown.timeline.at(-1)).toMatchObject({
      kind: 'operator_resolution',
      detail: { by: 'operator:erin' },
    });
  });
});

describe('exit codes: 2 for a command line that is wrong, 1 for a command that ran and failed', () => {
  it('usage errors exit 2, with commander saying what was wrong', async () => {
    for (const args of [
      ['executions', 'bogus'],
      ['executions', 'list', '--no-such-flag'],
      ['executions', 'show'],
      ['executions', 'resolve', 'exe_x', '--as', 'maybe', '--note', 'n'],
      ['executions', 'list', '--since', 'yesterday-ish'],
      ['sweep', '--retention', 'soon'],
      ['executions'],
    ]) {
      const result = await idem(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).not.toBe('');
    }
    expect((await runIdem(['frobnicate'], { dataDir: dir })).code).toBe(2);
    expect((await runIdem(['--help'], { dataDir: dir })).code).toBe(0);
  });

  it('a command that ran and failed exits 1', async () => {
    const missing = await idem('executions', 'show', 'exe_nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('idem: no execution exe_nope\n');
  });
});

describe('read-only commands and a data directory that does not exist', () => {
  it('say there is no store, exit 1, and leave no directory behind', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'idem-cli-nodir-'));
    const dataDir = join(parent, 'never-made');
    const config = join(parent, 'idem.yaml');
    writeFileSync(config, `data_dir: ${join(parent, 'configured')}\nupstreams: { up: { command: node } }\n`);
    try {
      for (const args of [
        ['executions', 'list'],
        ['executions', 'show', 'exe_x'],
        ['sessions', 'list'],
        ['approvals', 'list'],
        ['sweep', '--dry-run'],
        ['executions', 'list', '--config', config],
      ]) {
        const result = await runIdem(args, { dataDir });
        expect(result.code, args.join(' ')).toBe(1);
        expect(result.stderr).toMatch(/^idem: no store at /);
      }
      // A check that could not check: 2, as documented.
      expect((await runIdem(['audit', 'verify'], { dataDir })).code).toBe(2);
      expect(existsSync(dataDir)).toBe(false);
      expect(existsSync(join(parent, 'configured'))).toBe(false);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
