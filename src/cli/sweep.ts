import { type Command, InvalidArgumentError } from 'commander';
import { durationMs } from '../contracts/duration.js';
import { DEFAULT_RETENTION } from '../defaults.js';
import { printJson, printTable, time } from './format.js';
import { locateStore, openLocatedStore, type StoreFlags } from './store-access.js';

export function registerSweepCommand(program: Command): void {
  program
    .command('sweep')
    .description(
      'Expired leases → unknown; finished executions past retention deleted. Never touches accepted, dispatched (live) or unknown ones. The gateway also runs this periodically.',
    )
    .option('--db <file|postgres-url>', 'the store')
    .option('-c, --config <file>', 'read the store location from an idem.yaml')
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
        const result = await store.sweep({
          retentionMs: durationMs(flags.retention, '--retention'),
          dryRun: flags.dryRun ?? false,
        });
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
