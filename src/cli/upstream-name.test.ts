import { describe, expect, it } from 'vitest';
import { commandUpstreamName, urlUpstreamName } from './upstream-name.js';

const nameOf = (line: string) => {
  const [command, ...args] = line.split(' ') as [string, ...string[]];
  return commandUpstreamName(command, args);
};

describe('commandUpstreamName: a zero-config upstream is named after what it runs', () => {
  it.each([
    ['npx -y @modelcontextprotocol/server-memory', 'server-memory'],
    ['npx -y @modelcontextprotocol/server-filesystem /tmp', 'server-filesystem'],
    ['npx @modelcontextprotocol/server-github@2025.4.8', 'server-github'],
    ['npx -y -p @acme/tools acme-mcp --port 3', 'acme-mcp'],
    ['npm exec --yes -- @acme/mcp@1', 'mcp'],
    ['pnpm dlx @acme/mcp-server', 'mcp-server'],
    ['bunx mcp-server-x@latest', 'mcp-server-x'],
    ['bun x mcp-server-x', 'mcp-server-x'],
    ['yarn dlx -q @acme/mcp-server', 'mcp-server'],
    ['uvx mcp-server-fetch', 'mcp-server-fetch'],
    ['uvx mcp-server-time==0.6.2 --local-timezone UTC', 'mcp-server-time'],
    ['uvx --from mcp-server-git mcp-server-git --repository .', 'mcp-server-git'],
    ['pipx run mcp-server-sqlite', 'mcp-server-sqlite'],
    ['node a.mjs', 'a'],
    ['node ./dir/a.mjs', 'a'],
    ['node --import tsx /repo/test/fixtures/plain-tools-server.ts --dir /tmp', 'plain-tools-server'],
    ['node /home/me/weather/build/index.js', 'weather'],
    ['node -e console.log(1)', 'node'],
    ['/usr/local/bin/node server.js', 'server'],
    ['python -m pkg.mod', 'pkg_mod'],
    ['python3 -u -m mcp_server_time', 'mcp_server_time'],
    ['python x.py', 'x'],
    ['python3.12 /srv/tools/weather.py --verbose', 'weather'],
    ['uv --directory /srv/weather run weather.py', 'weather'],
    ['tsx x.ts', 'x'],
    ['deno run -A x.ts', 'x'],
    ['deno run --allow-net jsr:@acme/mcp-server@1.2', 'mcp-server'],
    ['bun x.ts', 'x'],
    ['bun run x.ts', 'x'],
    ['docker run -i --rm -e GITHUB_TOKEN ghcr.io/github/github-mcp-server', 'github-mcp-server'],
    ['docker run -i --rm --name=x -v /a:/b mcp/fetch:latest', 'fetch'],
    ['podman run -i localhost:5000/acme/server@sha256:abc', 'server'],
    ['/opt/servers/my-server --flag', 'my-server'],
    ['C:\\tools\\my-server.exe', 'my-server'],
    ['npx', 'npx'],
    ['node', 'node'],
  ])('%s → %s', (line, name) => {
    expect(nameOf(line)).toBe(name);
  });

  it('is always a config key: [A-Za-z0-9_-], at most 32 characters, never empty', () => {
    expect(commandUpstreamName('npx', ['-y', '@acme/a.very.long.package.name.that.goes.on.and.on'])).toBe(
      'a_very_long_package_name_that_go',
    );
    expect(commandUpstreamName('node', ['./héllo wörld.mjs'])).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
    expect(commandUpstreamName('')).toBe('upstream');
  });

  it('names a URL upstream after its host, as before', () => {
    expect(urlUpstreamName(new URL('http://127.0.0.1:3001/mcp'))).toBe('127_0_0_1');
    expect(urlUpstreamName(new URL('https://mcp.example.com/mcp'))).toBe('mcp_example_com');
  });
});
