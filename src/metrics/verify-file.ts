import { rename, writeFile } from 'node:fs/promises';
import { loadPromClient } from '../support/optional-packages.js';

/** How one `idem audit verify` ended, for the metrics file it leaves behind. */
export interface VerifyRun {
  /** The journals and the executions table verified intact (exit 0); false: tampered, or not checked. */
  ok: boolean;
  /** When it finished (ms since the epoch, the wall clock Prometheus compares with `time()`). */
  finishedAt: number;
  durationSeconds: number;
}

/**
 * Writes what a verify found as a Prometheus text file, for node_exporter's textfile collector
 * (`--collector.textfile.directory`): verify reads every journal entry, so it runs on a
 * schedule (cron, a systemd timer) beside the store rather than inside a gateway, and the file
 * is how its verdict reaches alerting. Written whole to a temporary name, then renamed, so the
 * collector never reads half a file.
 */
export async function writeVerifyMetrics(path: string, run: VerifyRun): Promise<void> {
  const { Gauge, Registry } = await loadPromClient();
  const registry = new Registry();
  const registers = [registry];
  new Gauge({
    name: 'idem_journal_verify_ok',
    help: 'The last `idem audit verify`: 1 journals and executions intact; 0 tampered, or it could not check',
    registers,
  }).set(run.ok ? 1 : 0);
  new Gauge({
    name: 'idem_journal_verify_last_run_timestamp_seconds',
    help: 'When the last `idem audit verify` finished (seconds since the epoch)',
    registers,
  }).set(run.finishedAt / 1000);
  new Gauge({
    name: 'idem_journal_verify_duration_seconds',
    help: 'How long the last `idem audit verify` took',
    registers,
  }).set(run.durationSeconds);
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, await registry.metrics(), { mode: 0o644 });
  await rename(temporary, path);
}
