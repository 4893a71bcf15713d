/**
 * The `--via` commands of the probe tests (issue 48): the gateways put in front
 * of the probe's counting upstream, started with this machine's node.
 */
import { shellWord } from '../../src/probe/targets.js';
import { fixtureArgs } from './compiled-fixtures.js';
import { IDEM_CLI } from './idem-cli.js';
import { packageBin } from './node22.js';

const node = (words: string[]) => [process.execPath, ...words].map(shellWord).join(' ');

/** Known-bad: a plain SDK pass-through, HTTP at both ends (add --remember: it deduplicates by arguments). */
export const PASS_THROUGH_VIA = `${node(fixtureArgs('test/probe/fixtures/pass-through.ts'))} --port {port} --upstream {upstream}`;

/** Known-good: idem gateway on an HTTP port, the upstream over stdio. */
export const IDEM_GATEWAY_VIA = `${node([IDEM_CLI])} gateway --listen 127.0.0.1:{port} -- {upstream_stdio}`;

/** mcp-proxy 6.7.19 (a devDependency), as measured in docs/probe.md. */
export const MCP_PROXY_VIA = `${node([packageBin('mcp-proxy', 'mcp-proxy')])} --host 127.0.0.1 --port {port} -- {upstream_stdio}`;
