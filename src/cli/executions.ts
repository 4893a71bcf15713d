import { type Command, InvalidArgumentError, Option } from 'commander';
import { RESOLUTIONS, type Resolution, resolveAsOperator } from '../executions/operator.js';
import { EXECUTION_STATES, type ExecutionState, isExecutionState } from '../executions/states.js';
import type { ActivityEntry } from '../journal/events.js';
import { tasksIn } from '../journal/task-events.js';
import { parseLimit } from './exit-codes.js';
import { parseSince, printJson, printTable, time } from './format.js';
import { type OperatorFlags, operatorOf, operatorOption } from './operator.js';
import { locateStore, openLocatedStore, type StoreFlags, storeOptions } from './store-access.js';

interface ListFlags extends StoreFlags {
  state?: ExecutionState[];
  tool?: string;
  actor?: string;
  since?: number;
  limit: number;
  json?: boolean;
}

/** `--state unknown,dispatched`: every name must be a state. */
function parseStates(value: string): ExecutionState[] {
  const states = value.split(',').map((s) => s.trim());
  const bad = states.filter((s) => !isExecutionState(s));
  if (bad.length)
    throw new InvalidArgumentError(
      `Unknown state ${bad.join(', ')} (one of ${EXECUTION_STATES.join(', ')}).`,
    );
  return states as ExecutionState[];
}

function parseSinceOption(value: string): number {
  try {
    return parseSince(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

export function registerExecutionCommands(program: Command): void {
  const executions = program.command('executions').description('Inspect and resolve executions');

  storeOptions(executions.command('list'))
    .description('Executions, newest first')
    .option('--state <states>', `comma-separated: ${EXECUTION_STATES.join(', ')}`, parseStates)
    .option('--tool <name>', 'only this tool')
    .option('--actor <actor>', 'only this actor')
    .option('--since <when>', 'a duration back from now (30m, 2h, 7d) or an ISO date', parseSinceOption)
    .option('--limit <n>', 'at most this many', parseLimit, 50)
    .option('--json', 'machine-readable')
    .action(async (flags: ListFlags) => {
      const store = await openLocatedStore(locateStore(flags));
      try {
        const records = await store.list({
          ...(flags.state ? { state: flags.state } : {}),
          ...(flags.tool ? { tool: flags.tool } : {}),
          ...(flags.actor ? { actor: flags.actor } : {}),
          ...(flags.since !== undefined ? { since: flags.since } : {}),
          limit: flags.limit,
        });
        if (flags.json) return printJson(records);
        printTable(
          ['REF', 'STATE', 'TOOL', 'ACTOR', 'CREATED', 'DELIVERED', 'ARGUMENTS'],
          records.map((r) => [
            r.id,
            r.state,
            r.tool,
            r.actor,
            time(r.createdAt),
            r.deliveredAt ? 'yes' : 'no',
            r.argumentsPreview,
          ]),
        );
      } finally {
        await store.close();
      }
    });

  storeOptions(executions.command('show'))
    .description('One execution and its timeline: who called, which request ids attached, what happened when')
    .argument('<ref>', 'execution id (exe_…)')
    .option('--json', 'machine-readable')
    .action(async (ref: string, flags: StoreFlags & { json?: boolean }) => {
      const store = await openLocatedStore(locateStore(flags));
      try {
        const record = await store.get(ref);
        const timeline = await store.journalFor(ref);
        if (!record && timeline.length === 0) throw new Error(`no execution ${ref}`);
        const requests = [
          ...new Set(timeline.map((e) => e.requestRef).filter((r): r is string => r !== null)),
        ];
        // Where the action went, as its `accepted` event recorded it (channel, target, the server's identity, credential NAME).
        const accepted = timeline.find(
          (e) => e.kind === 'accepted' && typeof e.detail.channel === 'string',
        )?.detail;
        // Only where it went: the same event also says which step of the approval ladder let it run.
        const action = accepted
          ? Object.fromEntries(
              ['channel', 'target', 'server', 'credential']
                .filter((k) => k in accepted)
                .map((k) => [k, accepted[k]]),
            )
          : undefined;
        // The MCP tasks it is (docs/tasks.md), beside its ref: what a client's tasks/get names it by.
        const tasks = tasksIn(timeline);
        if (flags.json)
          return printJson({ execution: record ?? null, action: action ?? null, requests, tasks, timeline });
        if (record) {
          for (const [label, value] of [
            ['ref', record.id],
            ['state', record.state],
            ['tool', record.tool],
            ['channel', String(action?.channel ?? '-')],
            ['target', String(action?.target ?? '-')],
            ['server', String(action?.server ?? '-')],
            ['credential', String(action?.credential ?? '-')],
            ['actor', record.actor],
            ['session', record.session ?? '-'],
            ['replay', record.replay],
            ['created', time(record.createdAt)],
            ['dispatched', time(record.dispatchedAt)],
            ['delivered', time(record.deliveredAt)],
            ['arguments', record.argumentsPreview],
            ['note', record.note ?? '-'],
            ['repeat of', linked(timeline, 'repeat_of')],
            ['repeated by', linked(timeline, 'repeated_by')],
            ['tasks', tasks.length ? tasks.map((t) => `${t.taskId} (${t.actor ?? '-'})`).join(', ') : '-'],
            [
              'upstream',
              record.upstreamTask
                ? `task ${record.upstreamTask.taskId} of ${record.upstreamTask.upstream} (${record.upstreamTask.generation})`
                : '-',
            ],
          ] as const) {
            process.stdout.write(`${label.padEnd(11)}${value}\n`);
          }
        } else process.stdout.write(`${ref}: trimmed from the store (retention); its journal remains\n`);
        process.stdout.write(`\n${requests.length} request(s) carried this execution:\n`);
        for (const r of requests) process.stdout.write(`  ${r}\n`);
        process.stdout.write('\ntimeline:\n');
        printTable(
          ['SEQ', 'WHEN', 'EVENT', 'ACTOR', 'REQUEST', 'DETAIL'],
          timeline.map((e) => [
            String(e.seq),
            time(e.at),
            e.kind,
            e.actor ?? '-',
            e.requestRef ?? '-',
            JSON.stringify(e.detail),
          ]),
        );
      } finally {
        await store.close();
      }
    });

  operatorOption(storeOptions(executions.command('resolve')))
    .description(
      "The operator's answer to an unknown outcome or a review: it happened (completed) or not (failed)",
    )
    .argument('<ref>', 'execution id (exe_…)')
    .addOption(
      new Option('--as <outcome>', 'what happened: completed or failed')
        .choices(RESOLUTIONS)
        .makeOptionMandatory(),
    )
    .requiredOption('--note <text>', 'what you checked, for the journal')
    .action(async (ref: string, flags: StoreFlags & OperatorFlags & { as: Resolution; note: string }) => {
      const by = operatorOf(flags);
      const store = await openLocatedStore(locateStore(flags));
      try {
        const outcome = await resolveAsOperator(store, ref, flags.as, by, flags.note);
        if (!outcome.resolved) throw new Error(outcome.reason);
        const { before, after } = outcome;
        process.stdout.write(`${ref}: ${before.state} → ${after.state} (by ${by})\n`);
      } finally {
        await store.close();
      }
    });
}

/**
 * The executions `repeat` events link this one to (docs/contracts.md, "Retry, repeat, new
 * action"): the one it repeats, or the ones that repeated it, each with why.
 */
function linked(timeline: ActivityEntry[], side: 'repeat_of' | 'repeated_by'): string {
  const links = timeline.flatMap((e) => {
    const ref = e.kind === 'repeat' ? e.detail[side] : undefined;
    if (typeof ref !== 'string') return [];
    return [`${ref} (${typeof e.detail.reason === 'string' ? e.detail.reason : 'status tool'})`];
  });
  return links.length > 0 ? links.join(', ') : '-';
}
