/**
 * Where a server process spends its CPU: a summary of V8 CPU profiles written
 * by `BENCH_GATEWAY_PROFILE=<dir> npx tsx bench/gateway.ts` (one directory per
 * series, one `.cpuprofile` per process and thread).
 *
 *   npx tsx bench/cpu-profile.ts <dir>/<series> [calls]
 *
 * Prints the busy (non-idle) time of each profile, per call when `calls` (the
 * calls that series served, warm-up included) is given, the time by area of
 * the code (self time, grouped by file), and the functions with the most
 * inclusive time. Busy time includes start-up (module loading).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Areas of the code, by file path: first match wins. */
const AREAS: [string, RegExp][] = [
  ['SQLite (better-sqlite3 + store)', /better-sqlite3|src\/store\/sqlite\//],
  ['memory store', /src\/store\/memory\//],
  ['journal hashing (chain)', /src\/journal\//],
  ['engine, contracts', /src\/executions\/|src\/contracts\//],
  ['fingerprint (canonical JSON, HMAC)', /src\/identity\/|canonicalize|node:internal\/crypto/],
  ['receipts', /src\/receipts\//],
  ['gateway session + catalog', /src\/gateway\//],
  [
    'upstream connection (stdio)',
    /src\/dispatch\/|sdk\/dist\/esm\/client\/stdio|sdk\/dist\/esm\/shared\/stdio/,
  ],
  ['HTTP front (Idem)', /src\/front\//],
  ['actor (os.userInfo, hostname)', /src\/library\/actor|^node:os$/],
  ['MCP SDK (transports, protocol)', /@modelcontextprotocol|@hono\/node-server|hono/],
  ['zod (message validation)', /node_modules\/zod\//],
  ['node http', /node:_http|node:http|llhttp/],
  [
    'node streams, net, events',
    /node:internal\/streams|node:net|node:events|node:internal\/stream_base|node:stream/,
  ],
  ['module loading (start-up)', /node:internal\/modules|tsx|esbuild|cjs-module-lexer/],
];

function areaOf(url: string, functionName: string): string {
  const path = url
    .replace(/^file:\/\/\/.*?node_modules\//, 'node_modules/')
    .replace(/^file:\/\/\/.*?\/src\//, 'src/');
  for (const [area, pattern] of AREAS) if (pattern.test(path)) return area;
  if (!url) {
    if (/^(writev|writeUtf8String|writeBuffer|writeLatin1String)$/.test(functionName))
      return 'native socket/pipe writes';
    if (functionName === '(garbage collector)') return 'garbage collector';
    return `native: ${functionName || '(anonymous)'}`;
  }
  return path.startsWith('node:') ? `node: ${path}` : path;
}

export function summarizeProfile(file: string, calls?: number): string[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfTime = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  let total = 0;
  let idle = 0;
  const areas = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const node of profile.nodes) {
    const t = selfTime.get(node.id) ?? 0;
    if (t === 0) continue;
    total += t;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += t;
      continue;
    }
    const area = areaOf(url, functionName);
    areas.set(area, (areas.get(area) ?? 0) + t);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = (byId.get(id) as ProfileNode).callFrame;
      if (frame.functionName === '(root)') break;
      const key = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^file:\/\/\/.*?(node_modules\/|src\/)/, '$1')}:${frame.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + t);
    }
    void lineNumber;
  }
  const busy = total - idle;
  const ms = (t: number) => (t / 1000).toFixed(0);
  const share = (t: number) => `${((100 * t) / busy).toFixed(1)}%`;
  const perCall = (t: number) => (calls ? ` (${(t / calls).toFixed(0)} µs per call)` : '');
  return [
    `${file}: ${ms(total)} ms profiled, ${ms(busy)} ms busy${perCall(busy)}`,
    '',
    '| area (self time) | share of busy time | µs per call |',
    '| --- | ---: | ---: |',
    ...[...areas]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 18)
      .map(([area, t]) => `| ${area} | ${share(t)} | ${calls ? (t / calls).toFixed(0) : ''} |`),
    '',
    'Most inclusive time:',
    ...[...inclusive]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 25)
      .map(([name, t]) => `  ${share(t).padStart(6)}  ${name}`),
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: npx tsx bench/cpu-profile.ts <dir with .cpuprofile files> [calls]');
    process.exit(2);
  }
  const calls = process.argv[3] ? Number(process.argv[3]) : undefined;
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    for (const line of summarizeProfile(join(dir, name), calls)) console.log(line);
    console.log('');
  }
}
