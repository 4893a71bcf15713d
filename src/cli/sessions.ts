import type { Command } from 'commander';
import { sessionsOf } from '../journal/agent-runs.js';
import { parseLimit } from './exit-codes.js';
import { printJson, printTable, time } from './format.js';
import { locateStore, openLocatedStore, type StoreFlags, storeOptions } from './store-access.js';

export function registerSessionCommands(program: Command): void {
  const sessions = program
    .command('sessions')
    .description('Agent runs: who connected, with which client and protocol, when');
  storeOptions(sessions.command('list'))
    .description(
      'Agent runs, newest first: session id, actor, client name and version, protocol revision, start and end',
    )
    .option('--limit <n>', 'at most this many', parseLimit, 50)
    .option('--json', 'machine-readable')
    .action(async (flags: StoreFlags & { limit: number; json?: boolean }) => {
      const store = await openLocatedStore(locateStore(flags));
      try {
        const rows = sessionsOf(await store.readJournal(0, 1_000_000, 'sessions')).slice(0, flags.limit);
        if (flags.json) return printJson(rows);
        printTable(
          ['SESSION', 'ACTOR', 'CLIENT', 'PROTOCOL', 'STARTED', 'ENDED'],
          rows.map((r) => [r.session, r.actor ?? '-', r.client, r.protocol, time(r.started), time(r.ended)]),
        );
      } finally {
        await store.close();
      }
    });

  storeOptions(sessions.command('show'))
    .description(
      'One agent run: its journal (start, end, upstream restarts) and the executions started in it',
    )
    .argument('<session>', 'session id (from idem sessions list)')
    .option('--json', 'machine-readable')
    .action(async (session: string, flags: StoreFlags & { json?: boolean }) => {
      const store = await openLocatedStore(locateStore(flags));
      try {
        const entries = (await store.readJournal(0, 1_000_000, 'sessions')).filter(
          (e) => e.requestRef === session,
        );
        const executions = (await store.list({ limit: 10_000 })).filter((r) => r.session === session);
        if (entries.length === 0 && executions.length === 0) throw new Error(`no session ${session}`);
        if (flags.json) return printJson({ session: sessionsOf(entries)[0] ?? null, entries, executions });
        printTable(
          ['SEQ', 'WHEN', 'EVENT', 'ACTOR', 'DETAIL'],
          entries.map((e) => [String(e.seq), time(e.at), e.kind, e.actor ?? '-', JSON.stringify(e.detail)]),
        );
        process.stdout.write(`\nexecutions started in this session:\n`);
        printTable(
          ['REF', 'STATE', 'TOOL', 'CREATED'],
          executions.map((r) => [r.id, r.state, r.tool, time(r.createdAt)]),
        );
      } finally {
        await store.close();
      }
    });
}
