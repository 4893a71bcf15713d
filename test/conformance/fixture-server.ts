/**
 * The conformance fixture: a plain MCP server on the official v2 SDK (no Idem)
 * that serves MCP 2025-11-25 and 2026-07-28 from one factory (fixture.ts). The
 * gateway is proven invisible by running the conformance suites against it
 * directly and through the gateway: 0.1.16's (2025-era) and 0.2's, for each
 * revision.
 *
 *   node --import tsx test/conformance/fixture-server.ts --stdio
 *   node --import tsx test/conformance/fixture-server.ts --port 0   # prints "listening <url>"
 *   … --port 0 --stateless   # 2025-era traffic per request too, no sessions (a stateless front's baseline)
 *   … --legacy-only          # (stdio or HTTP) 2025-era revisions only, as a server older than 2026-07-28
 *
 * Over stdio `serveStdio` pins each connection to the era its opening exchange
 * chose (initialize → 2025, server/discover → 2026-07-28). --legacy-only is
 * for the tests that need a server of the 2025 era only (a 2025-era upstream
 * beside a 2026-07-28 one; a client that must not fall back silently): over
 * stdio the server is wired to the transport by hand, as a 2025-era server is,
 * and server/discover is a method it does not know (-32601). HTTP is served by
 * fixture-http.ts, imported only then: the gateway spawns one stdio
 * upstream per client session, so the stdio start loads as little as it can.
 */
import { pathToFileURL } from 'node:url';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { createFixtureServer, newFixtureState } from './fixture.js';

const USAGE =
  'usage: fixture-server.ts --stdio | --port <n> (0: any free port) [--stateless] [--legacy-only]\n';

async function main(argv: string[]): Promise<void> {
  const legacyOnly = argv.includes('--legacy-only');
  const stateless = argv.includes('--stateless');
  if (stateless && legacyOnly) {
    process.stderr.write(`--stateless and --legacy-only exclude each other\n${USAGE}`);
    process.exit(2);
  }
  if (argv.includes('--stdio')) {
    const state = newFixtureState();
    if (legacyOnly) await createFixtureServer(state).connect(new StdioServerTransport());
    else serveStdio(() => createFixtureServer(state));
    return;
  }
  const portIndex = argv.indexOf('--port');
  const port = portIndex >= 0 ? Number(argv[portIndex + 1]) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const { serveFixtureHttp } = await import('./fixture-http.js');
  const served = await serveFixtureHttp({ port, stateless, legacyOnly });
  process.stdout.write(`listening ${served.url}\n`);
  const stop = () => {
    served.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
}
