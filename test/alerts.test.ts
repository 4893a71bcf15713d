/**
 * docs/alerts.yaml as Prometheus takes it: `promtool check rules` accepts it, `promtool test rules`
 * shows each rule fire and clear (test/fixtures/alerts.test.yaml), and the metrics its rules
 * name are what a real gateway's scrape and `idem audit verify --metrics-file` export, in a form
 * `promtool check metrics` passes.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ActivityEventInput } from '../src/journal/events.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { ClaimInput } from '../src/store/types.js';
import { approvalRequest, claimInput } from './support/claim-input.js';
import { type GatewayProcess, startGatewayProcess } from './support/gateway-process.js';
import { REPO_ROOT } from './support/node22.js';
import { runIdem } from './support/run-cli.js';

const RULES = join(REPO_ROOT, 'docs/alerts.yaml');

function promtool(args: string[], input?: string): { status: number | null; out: string } {
  const run = spawnSync('promtool', args, { cwd: REPO_ROOT, encoding: 'utf8', ...(input ? { input } : {}) });
  if (run.error) throw run.error;
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

/** The value of a sample without labels, as the text format has it; undefined when absent. */
function sampleIn(text: string, name: string): number | undefined {
  const line = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return line ? Number(line[1]) : undefined;
}

/** Every metric name an expression of docs/alerts.yaml reads, but Prometheus's own `up`. */
function namesTheRulesRead(): string[] {
  const exprs = [...readFileSync(RULES, 'utf8').matchAll(/^\s*expr: (.*)$/gm)].map((m) => m[1] as string);
  return [...new Set(exprs.flatMap((e) => e.match(/\bidem_[a-z_]+/g) ?? []))].sort();
}

describe('docs/alerts.yaml', () => {
  it('promtool check rules accepts it', () => {
    const checked = promtool(['check', 'rules', RULES]);
    expect(checked.out).toContain('SUCCESS: 6 rules found');
    expect(checked.status).toBe(0);
  });

  it('promtool test rules: every rule fires on its series and clears when they do (test/fixtures/alerts.test.yaml)', () => {
    const tested = promtool(['test', 'rules', join(REPO_ROOT, 'test/fixtures/alerts.test.yaml')]);
    expect(tested.out).toContain('SUCCESS');
    expect(tested.status).toBe(0);
  });
});

describe('what the rules read, exported for real', () => {
  const dir = mkdtempSync(join(tmpdir(), 'idem-alerts-'));
  const db = join(dir, 'idem.db');
  let gateway: GatewayProcess;
  let scrape = '';
  let verifyFile = '';

  beforeAll(async () => {
    // One execution whose outcome is unknown and one awaiting approval, written as the engine does.
    const store = await SqliteStore.open({ path: db });
    const claimed = (input: ClaimInput, then: 'dispatched' | 'awaiting_approval'): ActivityEventInput[] =>
      ['accepted' as const, then].map((kind) => ({
        kind,
        executionId: input.id,
        actor: input.actor,
        tool: input.tool,
      }));
    const lost = claimInput({ state: 'dispatched', dispatchTimeoutMs: 60_000 });
    await store.claim(lost, { events: claimed(lost, 'dispatched') });
    await store.transition({
      id: lost.id,
      from: ['dispatched'],
      to: 'unknown',
      token: lost.claimToken,
      events: [{ kind: 'outcome', executionId: lost.id, detail: { state: 'unknown' } }],
    });
    const waiting = claimInput({ state: 'awaiting_approval', approval: approvalRequest() });
    await store.claim(waiting, { events: claimed(waiting, 'awaiting_approval') });
    await store.close();

    gateway = await startGatewayProcess(
      {
        data_dir: dir,
        // A tool of the gateway's own, never called: no upstream process to start.
        http_tools: {
          ping: {
            description: 'Never called.',
            input_schema: { type: 'object' },
            method: 'POST',
            url: 'http://127.0.0.1:9/ping',
            allow: { addresses: ['127.0.0.1'] },
            contract: { replay: 'keyed' },
          },
        },
        metrics: { listen: '127.0.0.1:0' },
        sweep_interval: '1h',
      },
      join(dir, 'idem.json'),
    );
    const metricsUrl = await vi.waitFor(
      () => {
        const url = /metrics on (http:\S+)/.exec(gateway.stderr())?.[1];
        if (!url) throw new Error('metrics not served yet');
        return url;
      },
      { timeout: 30_000, interval: 50 },
    );
    scrape = await (await fetch(metricsUrl)).text();
    await gateway.kill();

    verifyFile = join(dir, 'idem-verify.prom');
    const verified = await runIdem(['audit', 'verify', '--db', db, '--metrics-file', verifyFile], {
      dataDir: dir,
    });
    expect(verified.stderr + verified.stdout).toMatch(/^OK/);
    expect(verified.code).toBe(0);
  }, 90_000);

  afterAll(async () => {
    await gateway?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a gateway's scrape: what waits on an operator, the store up, the process metrics; promtool check metrics passes it", () => {
    expect(sampleIn(scrape, 'idem_store_up')).toBe(1);
    expect(sampleIn(scrape, 'idem_executions_unknown')).toBe(1);
    expect(sampleIn(scrape, 'idem_executions_awaiting_approval')).toBe(1);
    expect(sampleIn(scrape, 'idem_oldest_unknown_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(sampleIn(scrape, 'idem_oldest_awaiting_approval_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(sampleIn(scrape, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(scrape).toMatch(/^nodejs_heap_size_used_bytes \d+/m);
    expect(scrape).toMatch(/^idem_approval_decisions_total\{decision="expired",via="expiry"\} 0$/m);
    expect(scrape).toMatch(/^idem_operator_resolutions_total\{outcome="completed"\} 0$/m);
    // Idem's own names pass as they are; prom-client's default metrics bring three gauges it named
    // *_total (prom-client's choice, not ours to rename), and nothing else is found.
    const checked = promtool(['check', 'metrics'], scrape);
    expect(checked.out.trim().split('\n').sort()).toEqual(
      ['handles', 'requests', 'resources'].map(
        (what) => `nodejs_active_${what}_total non-counter metrics should not have "_total" suffix`,
      ),
    );
    const withoutThem = scrape
      .split('\n')
      .filter((line) => !/nodejs_active_(handles|requests|resources)_total\b/.test(line))
      .join('\n');
    expect(promtool(['check', 'metrics'], withoutThem)).toEqual({ status: 0, out: '' });
  });

  it('idem audit verify --metrics-file: the verdict for the textfile collector, 1 when intact; promtool check metrics passes it', () => {
    const text = readFileSync(verifyFile, 'utf8');
    expect(sampleIn(text, 'idem_journal_verify_ok')).toBe(1);
    const ranAt = sampleIn(text, 'idem_journal_verify_last_run_timestamp_seconds') as number;
    expect(Math.abs(ranAt - Date.now() / 1000)).toBeLessThan(120);
    expect(sampleIn(text, 'idem_journal_verify_duration_seconds')).toBeGreaterThan(0);
    const checked = promtool(['check', 'metrics'], text);
    expect(checked.out).toBe('');
    expect(checked.status).toBe(0);
  });

  it('every metric a rule reads is exported: by the gateway, or by the verify', () => {
    const read = namesTheRulesRead();
    expect(read).toEqual([
      'idem_journal_verify_last_run_timestamp_seconds',
      'idem_journal_verify_ok',
      'idem_oldest_awaiting_approval_age_seconds',
      'idem_oldest_unknown_age_seconds',
      'idem_store_up',
    ]);
    const verify = readFileSync(verifyFile, 'utf8');
    const exported = (name: string) =>
      new RegExp(`^${name}[ {]`, 'm').test(scrape) || new RegExp(`^${name}[ {]`, 'm').test(verify);
    expect(read.filter((name) => !exported(name))).toEqual([]);
  });

  it('a journal changed behind Idem: exit 1 and idem_journal_verify_ok 0; a file it cannot write: exit 2', async () => {
    const tampered = join(dir, 'tampered.db');
    copyFileSync(db, tampered);
    const handle = new Database(tampered);
    handle.exec('DROP TRIGGER activity_journal_no_update; DROP TRIGGER activity_journal_no_delete;');
    // The first row, whatever it holds: a row of several events keeps kind '' (what verify expects of it).
    handle
      .prepare('UPDATE activity_journal SET kind = ? WHERE seq = (SELECT min(seq) FROM activity_journal)')
      .run('denied');
    handle.close();
    const file = join(dir, 'tampered.prom');
    const found = await runIdem(['audit', 'verify', '--db', tampered, '--metrics-file', file], {
      dataDir: dir,
    });
    expect(found.code).toBe(1);
    expect(sampleIn(readFileSync(file, 'utf8'), 'idem_journal_verify_ok')).toBe(0);

    const nowhere = join(dir, 'no-such-dir', 'verify.prom');
    const unwritten = await runIdem(['audit', 'verify', '--db', db, '--metrics-file', nowhere], {
      dataDir: dir,
    });
    expect(unwritten.stderr).toContain('metrics file not written');
    expect(unwritten.code).toBe(2);
  }, 30_000);
});
