/**
 * npm run conformance [-- options]
 *
 * Runs the MCP conformance suite (server mode, on Node 22) against the
 * fixture server over Streamable HTTP on a free loopback port, prints every
 * scenario's result, and exits non-zero if any check fails or warns beyond
 * the documented KNOWN_NON_SUCCESS list (test/conformance/harness.ts).
 *
 * Options:
 *   --suite active|all|pending  which scenarios (default: active — every active scenario)
 *   --scenario <name>           one scenario only
 *   --url <url>                 test this server instead of starting the fixture
 *   --via "<shell command>"     also run the suite through a proxy started by this command,
 *                               then compare: every check that passed directly must pass
 *                               through it. Placeholders:
 *                                 {upstream}        the direct server's URL
 *                                 {upstream_stdio}  the command line (words) that runs the fixture over stdio
 *                                 {port}            a free loopback port for the proxy to listen on
 *                               The proxy's URL is http://127.0.0.1:{port}/mcp when {port} is used,
 *                               otherwise the first http(s) URL the command prints on stdout.
 *   --json                      print the runs as JSON instead of text
 *
 * Example (the gateway task):
 *   npm run conformance -- --via "npx idem gateway --upstream {upstream} --port {port}"
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
  type RunningServer,
  runConformance,
  type Suite,
  startFixture,
  stopProcess,
  waitForUrl,
} from '../test/conformance/harness.js';
import { REPO_ROOT } from '../test/support/node22.js';

const USAGE = `usage: npm run conformance -- [--suite active|all|pending] [--scenario <name>] [--url <url>]
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

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      suite: { type: 'string', default: 'active' },
      scenario: { type: 'string' },
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
  const suite = values.suite as Suite;
  if (!['active', 'all', 'pending'].includes(suite)) throw new Error(`unknown suite ${suite}`);
  const json = values.json ?? false;
  const started: RunningServer[] = [];
  try {
    let url = values.url;
    if (!url) {
      const fixture = await startFixture();
      started.push(fixture);
      url = fixture.url;
    }
    const options = { suite, ...(values.scenario ? { scenario: values.scenario } : {}) };
    if (!json) console.log(`== direct: ${url}`);
    const direct = await runConformance({ url, ...options });
    let ok = report(direct, json);
    const runs: Record<string, unknown> = { direct };

    if (values.via) {
      const via = await startVia(values.via, url);
      started.push(via);
      if (!json) console.log(`== via: ${values.via}\n   at ${via.url}`);
      const proxied = await runConformance({ url: via.url, ...options });
      ok = report(proxied, json) && ok;
      const comparison = compareRuns(direct, proxied);
      runs.via = proxied;
      runs.comparison = comparison;
      if (!json) {
        for (const check of comparison.lost) console.log(`LOST through the proxy: ${check}`);
        for (const check of comparison.gained) console.log(`gained through the proxy: ${check}`);
        console.log(
          comparison.lost.length === 0 ? 'Same passing checks through the proxy.' : 'The proxy is visible.',
        );
      }
      ok = ok && comparison.lost.length === 0;
    }
    if (json) console.log(JSON.stringify(runs, null, 2));
    return ok ? 0 : 1;
  } finally {
    for (const server of started.reverse()) await server.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
