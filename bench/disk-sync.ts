/**
 * What one sync costs on the disk under the data directory, by how long the
 * disk was left alone before it. A durable claim waits for one fdatasync of
 * the WAL (SQLite) or one WAL flush (PostgreSQL); what that costs bounds the
 * claim from below, and on some machines it depends on the pace of the calls:
 * back to back (the store benchmarks' loops) a sync is cheap, at the pace of a
 * gateway call (a few ms apart) it costs several times more.
 *
 *   npx tsx bench/disk-sync.ts      # BENCH_DISK_SYNCS syncs per series (default 400)
 *
 * Each sync follows an overwrite of 41 KiB in a preallocated file: about what
 * one call's claim and outcome put in the WAL (10 frames of 4 KiB), written
 * where the WAL writes once it has wrapped.
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

const WRITE_BYTES = 10 * (4096 + 24);
const SLOTS = 100;
/** Idle time before each sync, ms: back to back, then the pace of a busy and a quiet gateway. */
const GAPS_MS = [0, 1, 4, 10];

/**
 * A file of SLOTS blocks under `dir`, written and synced once, in which `timeSyncs` overwrites a
 * block and syncs; `close` removes it.
 */
export class SyncProbe {
  readonly #work: string;
  readonly #fd: number;
  readonly #block = Buffer.alloc(WRITE_BYTES, 0x5a);
  #next = 0;

  constructor(dir: string) {
    this.#work = mkdtempSync(join(dir, 'idem-bench-disk-'));
    this.#fd = openSync(join(this.#work, 'wal'), 'w');
    for (let slot = 0; slot < SLOTS; slot++)
      writeSync(this.#fd, this.#block, 0, WRITE_BYTES, slot * WRITE_BYTES);
    fdatasyncSync(this.#fd);
  }

  /** µs of each of `syncs` fdatasyncs, each after `idleMs` of idle and an overwrite of one block. */
  async timeSyncs(syncs: number, idleMs: number): Promise<number[]> {
    const samples: number[] = [];
    for (let i = 0; i < syncs; i++) {
      if (idleMs > 0) await sleep(idleMs);
      writeSync(this.#fd, this.#block, 0, WRITE_BYTES, (this.#next++ % SLOTS) * WRITE_BYTES);
      const started = process.hrtime.bigint();
      fdatasyncSync(this.#fd);
      samples.push(Number(process.hrtime.bigint() - started) / 1000);
    }
    return samples;
  }

  close(): void {
    closeSync(this.#fd);
    rmSync(this.#work, { recursive: true, force: true });
  }
}

/** The median of `samples` (sorted in place). */
export function median(samples: number[]): number {
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] as number;
}

export async function benchDiskSync(syncs: number, dir = tmpdir()): Promise<string[]> {
  const probe = new SyncProbe(dir);
  try {
    const p50: number[] = [];
    for (const gap of GAPS_MS) p50.push(median(await probe.timeSyncs(syncs, gap)));
    const base = p50[0] as number;
    return [
      `${syncs.toLocaleString('en')} syncs per series, each after an overwrite of ${WRITE_BYTES.toLocaleString('en')} bytes, under ${dir}.`,
      '',
      '| idle before each sync | fdatasync p50 µs | ÷ back to back |',
      '| --- | ---: | ---: |',
      ...GAPS_MS.map(
        (gap, i) =>
          `| ${gap === 0 ? 'none (back to back)' : `${gap} ms`} | ${(p50[i] as number).toFixed(0)} | ${((p50[i] as number) / base).toFixed(2)}× |`,
      ),
    ];
  } finally {
    probe.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const line of await benchDiskSync(Number(process.env.BENCH_DISK_SYNCS ?? 400))) console.log(line);
}
