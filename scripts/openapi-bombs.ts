/**
 * npx tsx scripts/openapi-bombs.ts [--timeout 60] [--only NAME] [--cli dist/cli/main.js]
 *
 * Issue 44 item 2 at full size: `idem gateway` (its own process, the built CLI) started on a
 * config whose `http_tools_from` names each hostile document of test/support/openapi-bombs.ts
 * (and one served endlessly by URL). For each: whether it started or refused, how long it took
 * to either (or that it was still loading at the timeout, then killed), its peak RSS, and the
 * first line of its refusal (or of what it served and skipped). `--cli` runs another build (e.g.
 * one of main's, to compare). Exits 1 if any attack was not refused within 1 s.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { builtCli } from '../test/support/dist.js';
import {
  deepNesting,
  largeDocument,
  refChain,
  refFanOut,
  refMesh,
  yamlAliasBomb,
} from '../test/support/openapi-bombs.js';
import { freshDir } from '../test/support/temp-dirs.js';
import { sleep } from '../test/support/wait.js';

const { values } = parseArgs({
  options: { timeout: { type: 'string', default: '60' }, only: { type: 'string' }, cli: { type: 'string' } },
});
const timeoutMs = Number(values.timeout) * 1000;
const cli = values.cli ?? builtCli();
const dir = freshDir('openapi-bombs');

interface Trial {
  name: string;
  what: string;
  /** The document's file name and text. */
  source: { file: string; text: string };
  /** Within the default limits: it loads (in the time and memory the row shows). */
  loads?: true;
}

const trials: Trial[] = [
  {
    name: 'baseline',
    what: 'a valid document of one operation (the start itself)',
    source: { file: 'one.json', text: refFanOut(1, 1) },
    loads: true,
  },
  {
    name: 'fanout-3',
    what: '`$ref` fan-out 10×10, 3 levels (10³)',
    source: { file: 'f3.json', text: refFanOut(3) },
    loads: true,
  },
  {
    name: 'fanout-4',
    what: '`$ref` fan-out 10×10, 4 levels (10⁴)',
    source: { file: 'f4.json', text: refFanOut(4) },
    loads: true,
  },
  {
    name: 'fanout-10',
    what: '`$ref` fan-out 10×10, 10 levels (10¹⁰)',
    source: { file: 'f10.json', text: refFanOut(10) },
  },
  {
    name: 'alias-bomb',
    what: 'YAML alias bomb, 9 levels of 10 (10⁹)',
    source: { file: 'laughs.yaml', text: yamlAliasBomb() },
  },
  {
    name: 'nesting-3000',
    what: '3,000 levels of nesting',
    source: { file: 'deep.json', text: deepNesting(3000) },
  },
  {
    name: 'ref-chain-3000',
    what: 'a chain of 3,000 `$ref`s',
    source: { file: 'chain.json', text: refChain(3000) },
  },
  {
    name: 'ref-mesh-12',
    what: '12 schemas that all refer to each other',
    source: { file: 'mesh.json', text: refMesh(12) },
    loads: true,
  },
  {
    name: 'schemas-25',
    what: '25 operations with input schemas of 1,224 objects each',
    source: { file: 'many.json', text: refFanOut(3, 10, 25) },
  },
  {
    name: 'large-64MiB',
    what: 'a 64 MiB document',
    source: { file: 'large.json', text: largeDocument(64 * 2 ** 20) },
  },
];

/** Peak resident memory of a running process (MiB), from /proc; undefined once it is gone. */
function peakRssMiB(pid: number): number | undefined {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

async function run(trial: Trial) {
  const source = join(dir, trial.source.file);
  writeFileSync(source, trial.source.text);
  const bytes = Buffer.byteLength(trial.source.text);
  const config = join(dir, `${trial.name}.json`);
  writeFileSync(
    config,
    JSON.stringify({ data_dir: join(dir, trial.name), http_tools_from: [{ openapi: source }] }),
  );
  const started = performance.now();
  const child = spawn(process.execPath, [cli, 'gateway', '--config', config, '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let peak = 0;
  let verdict: 'started' | 'refused' | 'still loading' | undefined;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => {
    verdict ??= 'refused';
  });
  while (verdict === undefined) {
    peak = Math.max(peak, peakRssMiB(child.pid as number) ?? 0);
    if (/Streamable HTTP on/.test(stderr)) verdict = 'started';
    else if (performance.now() - started > timeoutMs) verdict = 'still loading';
    else await sleep(20);
  }
  const ms = performance.now() - started;
  child.kill('SIGKILL');
  await exited;
  const line = stderr.split('\n').find((l) => /http_tools_from|refused|Error/.test(l)) ?? '';
  const skipped = stderr.split('\n').find((l) => /: skipped /.test(l));
  return {
    ...trial,
    bytes,
    verdict,
    ms,
    peak,
    line: [line, skipped].filter(Boolean).join('\n  ').slice(0, 500),
  };
}

const rows = [];
try {
  for (const trial of trials) {
    if (values.only && trial.name !== values.only) continue;
    const row = await run(trial);
    rows.push(row);
    process.stderr.write(
      `${row.name}: ${row.verdict} after ${(row.ms / 1000).toFixed(2)} s, peak RSS ${Math.round(row.peak)} MiB\n  ${row.line}\n`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(
  `${[
    '| attack | document | outcome | time | peak RSS |',
    '| --- | ---: | --- | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.what} | ${(r.bytes / 1024).toFixed(1)} KiB | ${r.verdict} | ${(r.ms / 1000).toFixed(2)} s | ${Math.round(r.peak)} MiB |`,
    ),
  ].join('\n')}\n`,
);
const start = rows.find((r) => r.name === 'baseline')?.ms ?? 0;
const held = rows.every((r) =>
  r.loads ? r.verdict === 'started' : r.verdict === 'refused' && r.ms - start < 1000,
);
process.exitCode = held ? 0 : 1;
