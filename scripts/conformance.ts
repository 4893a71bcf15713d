/**
 * npm run conformance [-- options]
 *
 * Runs the MCP conformance suites (server mode, on Node 22) against the
 * project's fixture over Streamable HTTP on a free loopback port, prints every
 * scenario's result, and exits non-zero if any check fails or warns beyond the
 * documented known lists (KNOWN_NON_SUCCESS and KNOWN_NON_SUCCESS_BY_REVISION
 * in test/conformance/harness.ts), or if a --via proxy loses a check.
 *
 * With neither --suite nor --requirements it runs all three, against one
 * fixture process (test/conformance/fixture-server.ts): the 0.1.16 active
 * suite, then the 0.2 suite's requirement sets for 2025-11-25 and 2026-07-28.
 *
 * Options:
 *   --suite active|all|pending  the 0.1.16 suite only, these scenarios
 *   --requirements <revision>   the 0.2 suite only, the scenarios this revision requires
 *                               (2025-11-25, 2026-07-28 or all; repeatable)
 *   --scenario <name>           this scenario only (of the suite, or at the given revision); repeatable
 *   --tasks                     the 0.2 suite's tasks extension scenarios (SEP-2663) only, at 2026-07-28,
 *                               against a plain upstream with the tools they name and no tasks, of each SDK
 *                               generation: tasks-upstream.ts (v2, 2026-07-28) and tasks-upstream-v1.ts (the
 *                               v1 SDK's low-level Server: pushed elicitation, JSON-RPC errors). Directly
 *                               each is a baseline (it cannot pass them, and that does not fail the run);
 *                               through --via every check must pass, in front of each.
 *   --scenario-timeout <ms>     per-scenario timeout of the 0.2 suite (default 30000)
 *   --url <url>                 test this server instead of starting a fixture
 *   --via "<shell command>"     also run each suite through a proxy started by this command
 *                               (one proxy per suite run), then compare: every check that passed
 *                               directly must pass through it. Placeholders:
 *                                 {upstream}        the direct server's URL
 *                                 {upstream_stdio}  the command line (words) that runs the fixture over stdio
 *                                 {port}            a free loopback port for the proxy to listen on
 *                                 {tasks_config}    (--tasks) a gateway config file: this run's upstream
 *                                                   over stdio, its tools' contracts (TASKS_CONTRACTS),
 *                                                   a fresh data directory
 *                               The proxy's URL is http://127.0.0.1:{port}/mcp when {port} is used,
 *                               otherwise the first http(s) URL the command prints on stdout.
 *   --json                      print the runs as JSON instead of text
 *
 * Examples (the gateway, stateful HTTP front, fixture as its stdio upstream):
 *   npm run conformance -- --via "npx tsx src/cli/main.ts gateway --listen 127.0.0.1:{port} -- {upstream_stdio}"
 *   npm run conformance -- --requirements 2026-07-28 --via "npx tsx src/cli/main.ts gateway --listen 127.0.0.1:{port} -- {upstream_stdio}"
 * The stateless front needs a config file with listen.http.stateless: true (see docs/protocol.md, Conformance).
 * The tasks scenarios, through a gateway whose config gives the tools their contracts, in front of
 * each generation's upstream in turn:
 *   npm run conformance -- --tasks --via "npx tsx src/cli/main.ts gateway --config {tasks_config} --listen 127.0.0.1:{port}"
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type ConformanceRun,
  compareRuns,
  evaluate,
  FIXTURE_PATH,
  fixtureStdioCommand,
  formatRun,
  isRevision,
  type KnownNonSuccess,
  REVISIONS,
  type Revision,
  type RunningServer,
  runConformance,
  type Suite,
  startFixture,
  stopProcess,
  TASKS_CONTRACTS,
  TASKS_SCENARIOS,
  TASKS_UPSTREAM_PATH,
  TASKS_UPSTREAM_V1_PATH,
  waitForUrl,
} from '../test/conformance/harness.js';
import { REPO_ROOT } from '../test/support/node22.js';

const USAGE = `usage: npm run conformance -- [--suite active|all|pending] [--requirements 2025-11-25|2026-07-28|all]...
                               [--tasks] [--scenario <name>]... [--scenario-timeout <ms>] [--url <url>]
                               [--via "<command with {upstream}, {upstream_stdio}, {port}>"] [--json]
(see the head of scripts/conformance.ts)`;

/** Quotes a shell word only when it needs it, so a placeholder also works inside double quotes. */
const shellWord = (value: string) =>
  /^[\w/.:=@%+,-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Polls until something answers HTTP at `url` (any status: the proxy is up). */
async function waitUntilListening(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream' } });
      await res.body?.cancel();
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`nothing listening at ${url} after ${timeoutMs} ms: ${error}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Starts the --via command in its own process group (so the whole group can be stopped). */
async function startVia(template: string, upstream: string, fixturePath: string): Promise<RunningServer> {
  const stdio = fixtureStdioCommand([], fixturePath);
  const port = template.includes('{port}') ? await freePort() : undefined;
  const command = template
    .replaceAll('{upstream_stdio}', [stdio.command, ...stdio.args].map(shellWord).join(' '))
    .replaceAll('{upstream}', shellWord(upstream))
    .replaceAll('{port}', String(port))
    .replaceAll('{tasks_config}', () => shellWord(tasksConfigFile(stdio)));
  const child = spawn(command, {
    shell: true,
    cwd: REPO_ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr.pipe(process.stderr);
  const close = async () => {
    const stopped = stopProcess(child);
    try {
      if (child.pid) process.kill(-child.pid, 'SIGTERM');
    } catch {
      // the group is gone already
    }
    await stopped;
  };
  try {
    let url: string;
    if (port !== undefined) {
      url = `http://127.0.0.1:${port}/mcp`;
      await waitUntilListening(url, 30_000);
    } else {
      url = await waitForUrl(child, /(https?:\/\/\S+)/, 30_000);
    }
    return { url, process: child, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * A gateway config (JSON is YAML) with the fixture as its one stdio upstream, the tasks contracts,
 * and a data directory of its own: a run is never answered from another run's executions.
 */
function tasksConfigFile(stdio: ReturnType<typeof fixtureStdioCommand>): string {
  const dir = mkdtempSync(join(tmpdir(), 'idem-conformance-tasks-'));
  const path = join(dir, 'tasks.json');
  const config = { data_dir: join(dir, 'data'), upstreams: { tasks: stdio }, tools: TASKS_CONTRACTS };
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}

function report(run: ConformanceRun, json: boolean, known?: readonly KnownNonSuccess[]): boolean {
  const evaluation = evaluate(run, known);
  if (!json) {
    console.log(formatRun(run));
    for (const line of evaluation.unexpected) console.log(`UNEXPECTED ${line}`);
    for (const line of evaluation.stale) console.log(`STALE ${line}`);
    console.log(evaluation.ok ? 'OK\n' : 'FAILED\n');
  }
  return evaluation.ok;
}

/**
 * One suite run to make: the 0.1.16 suite by name, or the 0.2 suite by revision
 * (all its scenarios, or `scenarios`). `known` replaces the harness's list of
 * known non-successes; `baseline`: the direct run only informs, and the proxy
 * is judged by `known` alone (it is meant to pass what the fixture cannot).
 */
type Plan = { label: string; fixturePath: string } & (
  | { suite: Suite }
  | { requirements: Revision; scenarios?: readonly string[]; known?: []; baseline?: true }
);

function plans(suiteFlag: string | undefined, requirementsFlags: string[], tasks: boolean): Plan[] {
  const byRevision = (revision: Revision): Plan => ({
    label: `0.2 suite, requirements ${revision}`,
    fixturePath: FIXTURE_PATH,
    requirements: revision,
  });
  const bySuite = (suite: Suite): Plan => ({
    label: `0.1.16 ${suite} suite`,
    fixturePath: FIXTURE_PATH,
    suite,
  });
  if (suiteFlag !== undefined && !['active', 'all', 'pending'].includes(suiteFlag))
    throw new Error(`unknown suite ${suiteFlag}`);
  const revisions = requirementsFlags.flatMap((r) => (r === 'all' ? [...REVISIONS] : [r]));
  for (const revision of revisions)
    if (!isRevision(revision))
      throw new Error(`unknown revision ${revision} (known: ${REVISIONS.join(', ')}, all)`);
  const tasksPlan: Plan[] = tasks
    ? (
        [
          ['v2-SDK', TASKS_UPSTREAM_PATH],
          ['v1-SDK', TASKS_UPSTREAM_V1_PATH],
        ] as const
      ).map(([sdk, fixturePath]) => ({
        label: `0.2 suite, tasks extension scenarios at 2026-07-28, ${sdk} upstream`,
        fixturePath,
        requirements: '2026-07-28',
        scenarios: TASKS_SCENARIOS,
        known: [],
        baseline: true,
      }))
    : [];
  if (suiteFlag === undefined && revisions.length === 0)
    return tasks ? tasksPlan : [bySuite('active'), ...REVISIONS.map(byRevision)];
  return [
    ...(suiteFlag === undefined ? [] : [bySuite(suiteFlag as Suite)]),
    ...[...new Set(revisions as Revision[])].map(byRevision),
    ...tasksPlan,
  ];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      suite: { type: 'string' },
      requirements: { type: 'string', multiple: true, default: [] },
      scenario: { type: 'string', multiple: true },
      tasks: { type: 'boolean', default: false },
      'scenario-timeout': { type: 'string' },
      url: { type: 'string' },
      via: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const json = values.json ?? false;
  const scenarioTimeoutMs = values['scenario-timeout'] ? Number(values['scenario-timeout']) : undefined;
  if (scenarioTimeoutMs !== undefined && !(scenarioTimeoutMs > 0))
    throw new Error(`--scenario-timeout ${values['scenario-timeout']}: expected a positive number of ms`);
  /** One process per fixture the plans use (the conformance fixture, the tasks upstream). */
  const fixtures = new Map<string, RunningServer>();
  const results: Record<string, unknown>[] = [];
  let ok = true;
  try {
    for (const plan of plans(values.suite, values.requirements ?? [], values.tasks ?? false)) {
      let url = values.url;
      if (!url) {
        let fixture = fixtures.get(plan.fixturePath);
        if (!fixture) {
          fixture = await startFixture({ path: plan.fixturePath });
          fixtures.set(plan.fixturePath, fixture);
        }
        url = fixture.url;
      }
      const scenarios = values.scenario?.length
        ? values.scenario
        : 'suite' in plan
          ? undefined
          : plan.scenarios;
      const known = 'suite' in plan ? undefined : plan.known;
      const baseline = 'baseline' in plan && plan.baseline === true;
      const options = {
        ...('suite' in plan ? { suite: plan.suite } : { requirements: plan.requirements }),
        ...(scenarios ? { scenario: scenarios } : {}),
        ...(scenarioTimeoutMs ? { scenarioTimeoutMs } : {}),
      };
      if (!json) console.log(`== ${plan.label}, direct: ${url}`);
      const direct = await runConformance({ url, ...options });
      if (baseline && !json)
        console.log(
          '(baseline: the fixture alone implements none of this; its failures do not fail the run)',
        );
      const directOk = report(direct, json, known);
      if (!baseline) ok = directOk && ok;
      const result: Record<string, unknown> = { label: plan.label, direct };
      results.push(result);
      if (!values.via) continue;

      const via = await startVia(values.via, url, plan.fixturePath);
      try {
        if (!json) console.log(`== ${plan.label}, via: ${values.via}\n   at ${via.url}`);
        const proxied = await runConformance({ url: via.url, ...options });
        ok = report(proxied, json, known) && ok;
        const comparison = compareRuns(direct, proxied);
        Object.assign(result, { via: proxied, comparison });
        if (!json) {
          for (const check of comparison.lost) console.log(`LOST through the proxy: ${check}`);
          for (const check of comparison.gained) console.log(`gained through the proxy: ${check}`);
          console.log(
            comparison.lost.length === 0
              ? `Same passing checks through the proxy (${plan.label}).\n`
              : `The proxy is visible (${plan.label}): ${comparison.lost.length} checks lost.\n`,
          );
        }
        ok = ok && comparison.lost.length === 0;
      } finally {
        await via.close();
      }
    }
    if (json) console.log(JSON.stringify(results, null, 2));
    return ok ? 0 : 1;
  } finally {
    for (const running of fixtures.values()) await running.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
