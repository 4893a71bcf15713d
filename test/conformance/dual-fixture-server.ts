/**
 * The dual-revision conformance fixture: a plain MCP server on the official v2
 * SDK (no Idem) that serves MCP 2025-11-25 and 2026-07-28 from one factory
 * (dual-fixture.ts). The gateway is proven invisible for both revisions by
 * running the 0.2 conformance suite against it directly and through the gateway.
 *
 *   node --import tsx test/conformance/dual-fixture-server.ts --stdio
 *   node --import tsx test/conformance/dual-fixture-server.ts --port 0   # prints "listening <url>"
 *   … --port 0 --stateless   # 2025-era traffic per request too, no sessions (a stateless front's baseline)
 *   … --legacy-only          # (stdio or HTTP) 2025-era revisions only, as a server older than 2026-07-28
 *
 * Over stdio `serveStdio` pins each connection to the era its opening exchange
 * chose (initialize → 2025, server/discover → 2026-07-28); with --legacy-only
 * the server is wired to the transport by hand, as such a server is, and
 * server/discover is a method it does not know (-32601). HTTP is served by
 * dual-fixture-http.ts, imported only then: the gateway spawns one stdio
 * upstream per client session, so the stdio start loads as little as it can.
 */
import { pathToFileURL } from 'node:url';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { createDualFixtureServer, newDualFixtureState } from './dual-fixture.js';

const USAGE =
  'usage: dual-fixture-server.ts --stdio | --port <n> (0: any free port) [--stateless] [--legacy-only]\n';

async function main(argv: string[]): Promise<void> {
  const legacyOnly = argv.includes('--legacy-only');
  const stateless = argv.includes('--stateless');
  if (stateless && legacyOnly) {
    process.stderr.write(`--stateless and --legacy-only exclude each other\n${USAGE}`);
    process.exit(2);
  }
  if (argv.includes('--stdio')) {
    const state = newDualFixtureState();
    if (legacyOnly) await createDualFixtureServer(state).connect(new StdioServerTransport());
    else serveStdio(() => createDualFixtureServer(state));
    return;
  }
  const portIndex = argv.indexOf('--port');
  const port = portIndex >= 0 ? Number(argv[portIndex + 1]) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const { serveDualFixtureHttp } = await import('./dual-fixture-http.js');
  const served = await serveDualFixtureHttp({ port, stateless, legacyOnly });
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
