import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { idemEnvironment } from '../environment.js';
import { StoreRefusedError } from '../errors.js';
import { loadConfig } from '../gateway/config/index.js';
import { signJournalHeads } from '../journal/head-signer.js';
import { SIGNED_HEAD_FILE } from '../journal/signing.js';
import { journalEvidence, refuseEmptyJournal } from '../store/lost-store.js';
import { printJson } from './format.js';
import { type OperatorFlags, operatorOf, operatorOption } from './operator.js';
import { locateStore, openLocatedStore, type StoreFlags, storeOptions } from './store-access.js';

interface NewStoreFlags extends StoreFlags, OperatorFlags {
  acceptLostExecutions?: boolean;
  reason?: string;
  json?: boolean;
}

/**
 * `idem store new`: the operator's explicit decision that a lost store
 * (lost-store.ts) stays lost. The old heads are kept aside, never deleted —
 * they are the evidence of what the lost store held — and the new store's
 * journal begins with who started it anew and why.
 */
export function registerStoreCommands(program: Command): void {
  const store = program.command('store').description('The store itself: starting anew after a lost store');
  operatorOption(storeOptions(store.command('new')))
    .description(
      'Start a new, empty store where a lost one was (the gateway refuses to start on an empty or missing store while journal-head.json says executions were recorded). Keeps the old heads as journal-head.lost-<time>.json and journals the new start. Retries of the lost executions may run their actions again.',
    )
    .requiredOption(
      '--accept-lost-executions',
      'required: you accept that the lost store’s executions are forgotten, and that their retries may run again',
    )
    .option('--reason <text>', 'why (kept in the journal)')
    .option('--json', 'machine-readable')
    .action(async (flags: NewStoreFlags) => {
      const location = locateStore(flags, { missingOk: true });
      const dataDir = location.dataDir;
      if (!dataDir) {
        throw new Error(
          'no data directory for this store: give --config or IDEM_DATA_DIR (its journal-head.json)',
        );
      }
      const evidence = journalEvidence(dataDir);
      const headFile = join(dataDir, SIGNED_HEAD_FILE);
      if (!evidence) {
        throw new Error(
          `nothing to start anew: ${headFile} holds no signed head, so the gateway starts on an empty store by itself`,
        );
      }
      const opened = await openLocatedStore(location);
      try {
        const place =
          location.kind === 'sqlite'
            ? ({ kind: 'sqlite', path: location.target } as const)
            : ({ kind: 'postgres', url: location.target } as const);
        if (!(await isLost(() => refuseEmptyJournal(dataDir, place, opened)))) {
          throw new Error(
            `the store at ${location.describe} is not lost: its journals are not empty. Nothing was changed. A restored backup needs no new store; check it with \`idem audit verify\``,
          );
        }
        const keptAs = `journal-head.lost-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
        if (existsSync(join(dataDir, keptAs))) throw new Error(`${keptAs} exists already; try again`);
        renameSync(headFile, join(dataDir, keptAs));
        const by = operatorOf(flags);
        await opened.appendEvents([
          {
            kind: 'store_started_anew',
            actor: by,
            detail: {
              by,
              via: 'cli',
              ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
              lostHeads: evidence,
              keptAs,
            },
          },
        ]);
        const signed = await signNewHeads(opened, dataDir, flags.config);
        const result = { store: location.describe, keptAs, lostHeads: evidence, by, signed };
        if (flags.json) return printJson(result);
        process.stdout.write(
          [
            `started a new store at ${location.describe}; the lost store's heads are kept as ${join(dataDir, keptAs)}.`,
            `journaled: store_started_anew by ${by}. Retries of the lost executions will run as new executions.`,
            signed
              ? 'signed the new journal heads.'
              : 'could not sign the new journal heads here: run `idem audit sign` with the signing key.',
            '',
          ].join('\n'),
        );
      } finally {
        await opened.close();
      }
    });
}

/** Signs the new store's heads with the configured key; false when the key is not readable here. */
async function signNewHeads(
  store: Parameters<typeof signJournalHeads>[0],
  dataDir: string,
  config: string | undefined,
): Promise<boolean> {
  const keyFile =
    (config ? loadConfig(config).journal_signing_key_file : undefined) ||
    idemEnvironment().journalSigningKeyFile;
  try {
    await signJournalHeads(store, dataDir, keyFile ? { keyFile } : {});
    return true;
  } catch {
    return false;
  }
}

/** Whether `check` refuses the store as lost (a missing or empty SQLite file was just created empty by opening it). */
async function isLost(check: () => Promise<void>): Promise<boolean> {
  try {
    await check();
    return false;
  } catch (error) {
    if (error instanceof StoreRefusedError && error.reason === 'lost') return true;
    throw error;
  }
}
