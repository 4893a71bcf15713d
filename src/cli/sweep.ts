import { type Command, InvalidArgumentError } from 'commander';
import { durationMs } from '../contracts/duration.js';
import { DEFAULT_RETENTION } from '../defaults.js';
import { Maintenance } from '../maintenance/maintenance.js';
import { printJson, printTable, time } from './format.js';
import { locateStore, openLocatedStore, type StoreFlags, storeOptions } from './store-access.js';

export function registerSweepCommand(program: Command): void {
  storeOptions(program.command('sweep'))
    .description(
      'Expired leases → unknown; finished executions past retention deleted; approval requests past their timeout ended (denied, expired). Never touches accepted, dispatched (live) or unknown ones. The gateway runs the same pass periodically.',
    )
    .option(
      '--retention <duration>',
      'keep finished executions this long (48h, 7d)',
      parseRetention,
      DEFAULT_RETENTION,
    )
    .option('--dry-run', 'report what would change; change nothing')
    .option('--json', 'machine-readable')
    .action(async (flags: StoreFlags & { retention: string; dryRun?: boolean; json?: boolean }) => {
      const store = await openLocatedStore(locateStore(flags));
      try {
        // The gateway's and the library's pass, once; signing the heads is left to them and `idem audit sign`.
        const maintenance = new Maintenance({
          store,
          retentionMs: durationMs(flags.retention, '--retention'),
          warn: (message, fields) =>
            process.stderr.write(`idem sweep: ${message} ${JSON.stringify(fields ?? {})}\n`),
        });
        const result = await maintenance.run({ dryRun: flags.dryRun ?? false });
        if (flags.json) return printJson({ dryRun: flags.dryRun ?? false, ...result });
        const verb = flags.dryRun ? 'would turn' : 'turned';
        process.stdout.write(`${verb} ${result.expired.length} expired dispatch(es) into unknown:\n`);
        printTable(
          ['REF', 'TOOL', 'ACTOR', 'DISPATCHED'],
          result.expired.map((r) => [r.id, r.tool, r.actor, time(r.dispatchedAt)]),
        );
        process.stdout.write(
          `${flags.dryRun ? 'would delete' : 'deleted'} ${result.trimmed} finished execution(s) past retention\n`,
        );
        if (!flags.dryRun)
          process.stdout.write(`ended ${result.approvalsExpired} approval request(s) past their timeout\n`);
      } finally {
        await store.close();
      }
    });
}

/** Checked as it is parsed, so a bad value is a usage error (exit 2), not a failed sweep. */
function parseRetention(value: string): string {
  try {
    durationMs(value, '--retention');
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return value;
}
