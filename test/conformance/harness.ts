/**
 * Runs the MCP conformance suite (server mode) on Node 22 against a server URL
 * and reads back every check it made. Two suites, both against the fixture
 * (fixture-server.ts, which serves both revision families):
 *   - 0.1.16 (`@modelcontextprotocol/conformance`), by suite (active/all/pending);
 *   - 0.2.x (`conformance-next`), by `--requirements <revision>` (2025-11-25 or
 *     2026-07-28: exactly the scenarios that revision requires, each run at its
 *     wire version).
 *
 * The same checks run against a fixture directly and through a proxy (the
 * gateway); `compareRuns` then says which checks passed directly but not
 * through it. A gateway is invisible when that list is empty.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { node22, packageBin, REPO_ROOT } from '../support/node22.js';

export const FIXTURE_PATH = join(REPO_ROOT, 'test/conformance/fixture-server.ts');
/** A plain upstream with the tools the tasks scenarios name and no tasks (tasks-upstream.ts). */
export const TASKS_UPSTREAM_PATH = join(REPO_ROOT, 'test/conformance/tasks-upstream.ts');
/** The same upstream on the v1 SDK's low-level `Server`, 2025-era only: pushed elicitation, JSON-RPC errors. */
export const TASKS_UPSTREAM_V1_PATH = join(REPO_ROOT, 'test/conformance/tasks-upstream-v1.ts');

/**
 * The 0.2 suite's tasks extension scenarios (SEP-2663), which it runs at
 * 2026-07-28 but files outside every revision's timeline (extension): named
 * one by one, they are run with `--force` (see runConformance).
 */
export const TASKS_SCENARIOS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-dispatch-and-envelope',
  'tasks-status-notifications',
  'tasks-required-task-error',
  'tasks-mrtr-composition',
] as const;

/**
 * The contracts the tasks scenarios' tools get through the gateway (docs/tasks.md shows the same
 * config): test/gateway/conformance-tasks.test.ts, and `npm run conformance -- --tasks`'s
 * `{tasks_config}`.
 */
export const TASKS_CONTRACTS = {
  greet: { replay: 'read_only' },
  slow_compute: { replay: 'keyed', task: 'optional', task_after: '0s', timeout: '10m' },
  failing_job: { replay: 'review', task: 'required' },
  // It fails at the protocol level only before it acts: its JSON-RPC error is its failure (a failed task).
  protocol_error_job: { replay: 'review', task: 'optional', task_after: '0s', jsonrpc_errors: 'failed' },
  confirm_delete: { replay: 'review', task: 'optional', task_after: '0s' },
  multi_input: { replay: 'review', task: 'optional', task_after: '0s' },
  test_tool_with_task: { replay: 'review', task: 'required', task_after: '5s' },
} as const;

/** The one tasks scenario the suite reports as SKIPPED (its notifications harness awaits a rewrite). */
const SKIPPED_TASKS_SCENARIO = 'tasks-status-notifications';

/** The protocol revisions the 0.2 suite has requirement sets for. */
export const REVISIONS = ['2025-11-25', '2026-07-28'] as const;
export type Revision = (typeof REVISIONS)[number];

export function isRevision(value: string): value is Revision {
  return (REVISIONS as readonly string[]).includes(value);
}

export type CheckStatus = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';

export interface Check {
  id: string;
  name: string;
  description: string;
  status: CheckStatus;
  errorMessage?: string;
  details?: unknown;
}

export interface ScenarioResult {
  scenario: string;
  checks: Check[];
  passed: number;
  failed: number;
  warnings: number;
}

export type Suite = 'active' | 'all' | 'pending';

export interface ConformanceRun {
  url: string;
  suite: Suite;
  /** Set for a 0.2 run by requirement set (then `suite` is not what ran). */
  requirements?: Revision;
  /** Scenarios the suite ran but does not score for `requirements`, with its reason (extension, pending, …). */
  notScored?: Record<string, string>;
  scenarios: ScenarioResult[];
  passed: number;
  failed: number;
  warnings: number;
  durationMs: number;
  /** The suite's own exit code (it counts failures only, not warnings). */
  exitCode: number | null;
  /** What the suite printed (stdout and stderr). */
  log: string;
}

/** A check (or, without `check`, every check of a scenario) known not to reach SUCCESS, and why. */
export interface KnownNonSuccess {
  scenario: string;
  check?: string;
  status: CheckStatus;
  reason: string;
}

/**
 * Checks that a plain SDK server cannot pass, each with its reason. Anything
 * else that is not SUCCESS/INFO fails the run, and an entry here that no
 * longer happens fails it too (stale), so the list stays exact.
 *
 * The active suite (the default) needs no entry: the fixture passes all of it.
 * These are the 0.1.16 suite's; the 0.2 suite's are KNOWN_NON_SUCCESS_BY_REVISION.
 */
export const KNOWN_NON_SUCCESS: readonly KnownNonSuccess[] = [
  {
    scenario: 'server-sse-polling',
    check: 'server-sse-priming-event',
    status: 'WARNING',
    reason:
      'Pending scenario. Its raw POST declares MCP-Protocol-Version 2025-03-26, and the SDK sends a priming ' +
      'event (and lets a handler close the stream) only to clients of 2025-11-25 or later, whose SSE parsers ' +
      'accept empty data. The fixture does both for 2025-11-25 (the 0.2 suite runs this scenario at ' +
      'that version).',
  },
  {
    scenario: 'server-sse-polling',
    check: 'server-sse-retry-field',
    status: 'WARNING',
    reason: 'Pending scenario. The retry field travels on the priming event, which is not sent (see above).',
  },
];

const TASKS_EXTENSION =
  'Tasks extension (SEP-2663), run but not scored for 2026-07-28: the fixture serves no tasks ' +
  '(McpServer does not implement the extension and the fixture declares no tasks capability).';

/**
 * The 0.2 suite against the fixture, per revision. Every scenario a revision
 * scores passes; what is left is unscored.
 */
export const KNOWN_NON_SUCCESS_BY_REVISION: Readonly<Record<Revision, readonly KnownNonSuccess[]>> = {
  '2025-11-25': [],
  '2026-07-28': TASKS_SCENARIOS.filter((scenario) => scenario !== SKIPPED_TASKS_SCENARIO).map((scenario) => ({
    scenario,
    status: 'FAILURE' as const,
    reason: TASKS_EXTENSION,
  })),
};

/** The known non-successes that apply to a run: by its revision for the 0.2 suite, else the 0.1.16 list. */
export function knownNonSuccessFor(run: ConformanceRun): readonly KnownNonSuccess[] {
  return run.requirements ? KNOWN_NON_SUCCESS_BY_REVISION[run.requirements] : KNOWN_NON_SUCCESS;
}

/**
 * What the 0.2 suite does not score for a revision, and why, read from its
 * summary ("Not scored for <rev>: …" then one `  ✓|✗ <scenario> (<reason>)` line each).
 */
export function readNotScored(log: string): Record<string, string> {
  const section = log.split(/^Not scored for /m)[1] ?? '';
  return Object.fromEntries(
    [...section.matchAll(/^ {2}[✓✗] (\S+) \(([^)]+)\)$/gmu)].map((m) => [m[1] ?? '', m[2] ?? '']),
  );
}

/**
 * Runs the suite against `url` on Node 22: with `requirements`, the 0.2 suite's
 * scenarios for that revision (`scenarioTimeoutMs` each, default 30 s: through
 * a gateway each scenario's session spawns a stdio upstream, seconds on a busy
 * machine); otherwise the 0.1.16 suite's `suite`. `scenario` narrows either to
 * the scenarios named, run one after another into one result. Named at a
 * revision, a scenario runs at it even when the suite files it elsewhere
 * (`--force`): the tasks extension's are on no revision's timeline, and
 * without it the suite skips them and writes no checks.
 */
export async function runConformance(options: {
  url: string;
  suite?: Suite;
  requirements?: Revision;
  scenario?: string | readonly string[];
  timeoutMs?: number;
  scenarioTimeoutMs?: number;
}): Promise<ConformanceRun> {
  const suite = options.suite ?? 'active';
  const outputDir = mkdtempSync(join(tmpdir(), 'idem-conformance-'));
  const named = options.scenario === undefined ? undefined : [options.scenario].flat();
  const selections = (named ?? [undefined]).map((scenario) =>
    options.requirements
      ? [
          ...(scenario
            ? ['--scenario', scenario, '--spec-version', options.requirements, '--force']
            : ['--requirements', options.requirements]),
          '--timeout',
          String(options.scenarioTimeoutMs ?? 30_000),
        ]
      : scenario
        ? ['--scenario', scenario]
        : ['--suite', suite],
  );
  const bin = options.requirements
    ? packageBin('conformance-next', 'conformance')
    : packageBin('@modelcontextprotocol/conformance', 'conformance');
  const started = performance.now();
  try {
    let output = '';
    let exitCode: number | null = 0;
    for (const select of selections) {
      const args = [bin, 'server', '--url', options.url, ...select, '--output-dir', outputDir];
      const { code, output: printed } = await runToEnd(node22(), args, options.timeoutMs ?? 600_000);
      output += printed;
      if (code !== 0 && exitCode === 0) exitCode = code;
    }
    const scenarios = readResults(outputDir, output, named);
    return {
      url: options.url,
      suite,
      ...(options.requirements
        ? { requirements: options.requirements, notScored: readNotScored(output) }
        : {}),
      scenarios,
      passed: sum(scenarios, 'passed'),
      failed: sum(scenarios, 'failed'),
      warnings: sum(scenarios, 'warnings'),
      durationMs: Math.round(performance.now() - started),
      exitCode,
      log: output,
    };
  } finally {
    rmSync(outputDir, { recursive: true, force: true });
  }
}

function sum(scenarios: ScenarioResult[], key: 'passed' | 'failed' | 'warnings'): number {
  return scenarios.reduce((total, s) => total + s[key], 0);
}

function runToEnd(
  command: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`conformance suite did not finish within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/**
 * Reads each scenario's checks.json (written as `server-<scenario>-<timestamp>/`).
 * A scenario the suite names in its summary but that wrote no file crashed or
 * timed out: it is reported as one failed check rather than dropped.
 */
function readResults(outputDir: string, log: string, only: readonly string[] | undefined): ScenarioResult[] {
  const byScenario = new Map<string, Check[]>();
  for (const entry of readdirSync(outputDir)) {
    const match = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry);
    if (!match?.[1]) continue;
    const file = join(outputDir, entry, 'checks.json');
    // A scenario that timed out or crashed leaves its directory without checks.
    if (!existsSync(file)) continue;
    const checks = JSON.parse(readFileSync(file, 'utf8')) as Check[];
    byScenario.set(match[1], [...(byScenario.get(match[1]) ?? []), ...checks]);
  }
  const named = only
    ? [...only]
    : [...log.matchAll(/^[✓✗] (\S+): \d+ passed, \d+ failed/gmu)].map((m) => m[1] ?? '');
  for (const scenario of named) {
    if (!byScenario.has(scenario)) {
      byScenario.set(scenario, [
        {
          id: scenario,
          name: scenario,
          description: 'Scenario crashed before writing its checks',
          status: 'FAILURE',
          errorMessage: 'no checks.json; see the run log',
        },
      ]);
    }
  }
  if (byScenario.size === 0) throw new Error(`the conformance suite reported no scenario:\n${log}`);
  // In the suite's own order (its summary), then anything it did not name.
  const order = [...new Set([...named, ...byScenario.keys()])];
  return order
    .map((scenario) => [scenario, byScenario.get(scenario) ?? []] as const)
    .map(([scenario, checks]) => ({
      scenario,
      checks,
      passed: checks.filter((c) => c.status === 'SUCCESS').length,
      failed: checks.filter((c) => c.status === 'FAILURE').length,
      warnings: checks.filter((c) => c.status === 'WARNING').length,
    }));
}

export interface Evaluation {
  ok: boolean;
  /** `scenario/check: STATUS message` for each FAILURE or WARNING not in KNOWN_NON_SUCCESS. */
  unexpected: string[];
  /** Known non-successes of scenarios that ran whose check now has another status. */
  stale: string[];
}

const matches = (k: KnownNonSuccess, scenario: string, check: Check) =>
  k.scenario === scenario && (k.check === undefined || k.check === check.id) && k.status === check.status;

/** Compares a run with the known non-successes: ok when it has only those, and all of those. */
export function evaluate(run: ConformanceRun, known = knownNonSuccessFor(run)): Evaluation {
  const unexpected: string[] = [];
  for (const { scenario, checks } of run.scenarios) {
    for (const check of checks) {
      if (check.status !== 'FAILURE' && check.status !== 'WARNING') continue;
      const isKnown = known.some((k) => matches(k, scenario, check));
      if (!isKnown)
        unexpected.push(
          `${scenario}/${check.id}: ${check.status} ${check.errorMessage ?? check.description}`,
        );
    }
  }
  const stale = known
    .filter((k) => {
      const ran = run.scenarios.find((s) => s.scenario === k.scenario);
      return ran && !ran.checks.some((c) => matches(k, k.scenario, c));
    })
    .map((k) => `${k.scenario}/${k.check ?? '*'}: expected ${k.status}, no longer happens`);
  return { ok: unexpected.length === 0 && stale.length === 0, unexpected, stale };
}

/** `scenario/check` of every check that passed. */
export function passingChecks(run: ConformanceRun): Set<string> {
  return new Set(
    run.scenarios.flatMap(({ scenario, checks }) =>
      checks.filter((c) => c.status === 'SUCCESS').map((c) => `${scenario}/${c.id}`),
    ),
  );
}

/** What passed in `direct` but not in `via` (lost), and the reverse (gained). */
export function compareRuns(
  direct: ConformanceRun,
  via: ConformanceRun,
): { lost: string[]; gained: string[] } {
  const before = passingChecks(direct);
  const after = passingChecks(via);
  return {
    lost: [...before].filter((c) => !after.has(c)).sort(),
    gained: [...after].filter((c) => !before.has(c)).sort(),
  };
}

/** One line per scenario, the failing checks under it, then the totals. */
export function formatRun(run: ConformanceRun): string {
  const width = Math.max(...run.scenarios.map((s) => s.scenario.length));
  const lines = run.scenarios.map(({ scenario, passed, failed, warnings, checks }) => {
    const mark = failed > 0 ? '✗' : warnings > 0 ? '!' : '✓';
    const unscored = run.notScored?.[scenario];
    const head =
      `${mark} ${scenario.padEnd(width)}  ${passed} passed, ${failed} failed, ${warnings} warnings` +
      (unscored ? ` (not scored: ${unscored})` : '');
    const problems = checks
      .filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')
      .map((c) => `    ${c.status} ${c.id}: ${c.errorMessage ?? c.description}`);
    return [head, ...problems].join('\n');
  });
  lines.push(
    `${run.scenarios.length} scenarios (${run.requirements ? `requirements ${run.requirements}` : `${run.suite} suite`}) against ${run.url}: ` +
      `${run.passed} checks passed, ${run.failed} failed, ${run.warnings} warnings in ${(run.durationMs / 1000).toFixed(1)} s`,
  );
  return lines.join('\n');
}

export interface RunningServer {
  url: string;
  process: ChildProcess;
  close(): Promise<void>;
}

/**
 * Starts the fixture over HTTP in its own process (the project's Node) on a
 * free loopback port; `args` are the fixture's own (`--stateless`, `--legacy-only`).
 */
export async function startFixture(
  options: { timeoutMs?: number; args?: string[]; path?: string } = {},
): Promise<RunningServer> {
  const args = [...fixtureArgs(options.path ?? FIXTURE_PATH), '--port', '0', ...(options.args ?? [])];
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await waitForUrl(child, /^listening (http:\S+)$/m, options.timeoutMs ?? 30_000);
  return { url, process: child, close: () => stopProcess(child) };
}

/**
 * The command that runs the fixture (or another server of this folder, `path`) over stdio, with
 * its own `args`, for clients and gateways that spawn their upstream.
 */
export function fixtureStdioCommand(
  args: string[] = [],
  path: string = FIXTURE_PATH,
): { command: string; args: string[]; cwd: string } {
  return {
    command: process.execPath,
    args: [...fixtureArgs(path), '--stdio', ...args],
    cwd: REPO_ROOT,
  };
}

/** Resolves with the first capture of `pattern` in the child's stdout; rejects if it exits or times out first. */
export function waitForUrl(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    // Only the tail is kept for the error message; once the URL is seen the
    // listeners go, and the streams keep flowing into nothing (never blocking the child).
    const keep = (text: string) => text.slice(-10_000);
    const done = () => {
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stdout?.off('data', onStdout);
      child.stderr?.off('data', onStderr);
    };
    const fail = (why: string) => {
      done();
      reject(new Error(`${why}\nstdout: ${stdout}\nstderr: ${stderr}`));
    };
    const onStdout = (chunk: Buffer) => {
      stdout = keep(stdout + chunk.toString('utf8'));
      const url = pattern.exec(stdout)?.[1];
      if (url) {
        done();
        resolve(url);
      }
    };
    const onStderr = (chunk: Buffer) => {
      stderr = keep(stderr + chunk.toString('utf8'));
    };
    const onExit = (code: number | null) => fail(`process exited (code ${code}) before printing its URL`);
    const timer = setTimeout(() => fail(`no URL within ${timeoutMs} ms`), timeoutMs);
    child.stdout?.on('data', onStdout);
    child.stderr?.on('data', onStderr);
    child.once('exit', onExit);
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process has exited. */
export function stopProcess(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
