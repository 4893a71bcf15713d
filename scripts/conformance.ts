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
 *   --scenario <name>           one scenario only (of the suite, or at the given revision)
 *   --scenario-timeout <ms>     per-scenario timeout of the 0.2 suite (default 30000)
 *   --url <url>                 test this server instead of starting a fixture
 *   --via "<shell command>"     also run each suite through a proxy started by this command
 *                               (one proxy per suite run), then compare: every check that passed
 *                               directly must pass through it. Placeholders:
 *                                 {upstream}        the direct server's URL
 *                                 {upstream_stdio}  the command line (words) that runs the fixture over stdio
 *                                 {port}            a free loopback port for the proxy to listen on
 *                               The proxy's URL is http://127.0.0.1:{port}/mcp when {port} is used,
 *                               otherwise the first http(s) URL the command prints on stdout.
 *   --json                      print the runs as JSON instead of text
 *
 * Examples (the gateway, stateful HTTP front, fixture as its stdio upstream):
 *   npm run conformance -- --via "npx tsx src/cli/main.ts gateway --listen 127.0.0.1:{port} -- {upstream_stdio}"
 *   npm run conformance -- --requirements 2026-07-28 --via "npx tsx src/cli/main.ts gateway --listen 127.0.0.1:{port} -- {upstream_stdio}"
 * The stateless front needs a config file with listen.http.stateless: true (see docs/protocol.md, Conformance).
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import {
  type ConformanceRun,
  compareRuns,
  evaluate,
  fixtureStdioCommand,
  formatRun,
  isRevision,
  REVISIONS,
  type Revision,
  type RunningServer,
  runConformance,
  type Suite,
  startFixture,
  stopProcess,
  waitForUrl,
} from '../test/conformance/harness.js';
import { REPO_ROOT } from '../test/support/node22.js';

const USAGE = `usage: npm run conformance -- [--suite active|all|pending] [--requirements 2025-11-25|2026-07-28|all]...
                               [--scenario <name>] [--scenario-timeout <ms>] [--url <url>]
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
async function startVia(template: string, upstream: string): Promise<RunningServer> {
  const stdio = fixtureStdioCommand();
  const port = template.includes('{port}') ? await freePort() : undefined;
  const command = template
    .replaceAll('{upstream_stdio}', [stdio.command, ...stdio.args].map(shellWord).join(' '))
    .replaceAll('{upstream}', shellWord(upstream))
    .replaceAll('{port}', String(port));
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

function report(run: ConformanceRun, json: boolean): boolean {
  const evaluation = evaluate(run);
  if (!json) {
    console.log(formatRun(run));
    for (const line of evaluation.unexpected) console.log(`UNEXPECTED ${line}`);
    for (const line of evaluation.stale) console.log(`STALE ${line}`);
    console.log(evaluation.ok ? 'OK\n' : 'FAILED\n');
  }
  return evaluation.ok;
}

/** One suite run to make: the 0.1.16 suite by name, or the 0.2 suite by revision. */
type Plan = { label: string } & ({ suite: Suite } | { requirements: Revision });

function plans(suiteFlag: string | undefined, requirementsFlags: string[]): Plan[] {
  const byRevision = (revision: Revision): Plan => ({
    label: `0.2 suite, requirements ${revision}`,
    requirements: revision,
  });
  const bySuite = (suite: Suite): Plan => ({
    label: `0.1.16 ${suite} suite`,
    suite,
  });
  if (suiteFlag !== undefined && !['active', 'all', 'pending'].includes(suiteFlag))
    throw new Error(`unknown suite ${suiteFlag}`);
  const revisions = requirementsFlags.flatMap((r) => (r === 'all' ? [...REVISIONS] : [r]));
  for (const revision of revisions)
    if (!isRevision(revision))
      throw new Error(`unknown revision ${revision} (known: ${REVISIONS.join(', ')}, all)`);
  if (suiteFlag === undefined && revisions.length === 0)
    return [bySuite('active'), ...REVISIONS.map(byRevision)];
  return [
    ...(suiteFlag === undefined ? [] : [bySuite(suiteFlag as Suite)]),
    ...[...new Set(revisions as Revision[])].map(byRevision),
  ];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      suite: { type: 'string' },
      requirements: { type: 'string', multiple: true, default: [] },
      scenario: { type: 'string' },
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
  let fixture: RunningServer | undefined;
  const results: Record<string, unknown>[] = [];
  let ok = true;
  try {
    for (const plan of plans(values.suite, values.requirements ?? [])) {
      let url = values.url;
      if (!url) {
        fixture ??= await startFixture();
        url = fixture.url;
      }
      const options = {
        ...('suite' in plan ? { suite: plan.suite } : { requirements: plan.requirements }),
        ...(values.scenario ? { scenario: values.scenario } : {}),
        ...(scenarioTimeoutMs ? { scenarioTimeoutMs } : {}),
      };
      if (!json) console.log(`== ${plan.label}, direct: ${url}`);
      const direct = await runConformance({ url, ...options });
      ok = report(direct, json) && ok;
      const result: Record<string, unknown> = { label: plan.label, direct };
      results.push(result);
      if (!values.via) continue;

      const via = await startVia(values.via, url);
      try {
        if (!json) console.log(`== ${plan.label}, via: ${values.via}\n   at ${via.url}`);
        const proxied = await runConformance({ url: via.url, ...options });
        ok = report(proxied, json) && ok;
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
    await fixture?.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
