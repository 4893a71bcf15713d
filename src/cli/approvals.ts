import type { Command } from 'commander';
import { expirePending } from '../approval/decide.js';
import { decideAsOperator } from '../approval/operator-decision.js';
import { type ApprovalView, approvalView, loadApprovalView } from '../approval/view.js';
import type { ExecutionStore } from '../store/types.js';
import { EXIT, parseLimit } from './exit-codes.js';
import { printJson, printTable, time } from './format.js';
import { type OperatorFlags, operatorOf, operatorOption } from './operator.js';
import { locateStore, openLocatedStore, type StoreFlags, storeOptions } from './store-access.js';

interface DecideFlags extends StoreFlags, OperatorFlags {
  reason?: string;
  json?: boolean;
}

/**
 * `idem approvals`: the operator's queue of actions waiting for a human
 * (docs/approvals.md). Works on the store itself, so it decides for every gateway
 * sharing it, while they run; the first decision wins, from whichever side.
 */
export function registerApprovalCommands(program: Command): void {
  const approvals = program
    .command('approvals')
    .description('The queue of actions waiting for approval: list, show, approve, deny');

  storeOptions(approvals.command('list'))
    .description('Approval requests, newest first: pending ones (default) or all')
    .option('--all', 'decided ones too')
    .option('--limit <n>', 'at most this many', parseLimit, 50)
    .option('--json', 'machine-readable')
    .action(async (flags: StoreFlags & { all?: boolean; limit: number; json?: boolean }) => {
      await withStore(flags, async (store) => {
        // Requests past their time are ended first, so the queue shows them as what they are.
        await expirePending(store);
        const requests = await store.listApprovals({ pending: !flags.all, limit: flags.limit });
        const views: ApprovalView[] = [];
        for (const request of requests) {
          const record = await store.get(request.executionId);
          if (record) views.push(approvalView(record, request));
        }
        if (flags.json) return printJson(views);
        printTable(
          ['REF', 'STATUS', 'TOOL', 'ACTOR', 'TARGET', 'REQUESTED', 'EXPIRES', 'ARGUMENTS'],
          views.map((v) => [
            v.ref,
            v.decision ?? 'pending',
            v.tool,
            v.actor,
            `${v.channel}:${v.target}`,
            time(v.requestedAt),
            time(v.expiresAt),
            v.arguments,
          ]),
        );
      });
    });

  storeOptions(approvals.command('show'))
    .description('What the approver is asked about one action, and how it was decided')
    .argument('<ref>', 'execution id (exe_…)')
    .option('--json', 'machine-readable')
    .action(async (ref: string, flags: StoreFlags & { json?: boolean }) => {
      await withStore(flags, async (store) => {
        const view = await loadApprovalView(store, ref);
        if (!view) throw new Error(`no approval request for ${ref}`);
        if (flags.json) return printJson(view);
        printView(view);
      });
    });

  for (const decision of ['approve', 'deny'] as const) {
    operatorOption(storeOptions(approvals.command(decision)))
      .description(
        decision === 'approve'
          ? 'Approve one action: it runs once, when its caller calls again'
          : 'Deny one action: its caller and every retry get IDEM_DENIED with the reason',
      )
      .argument('<ref>', 'execution id (exe_…)')
      .option('--reason <text>', 'why, for the caller and the journal')
      .option('--json', 'machine-readable')
      .action(async (ref: string, flags: DecideFlags) => {
        const by = operatorOf(flags);
        await withStore(flags, async (store) => {
          const outcome = await decideAsOperator(store, ref, decision === 'approve' ? 'approved' : 'denied', {
            by,
            via: 'cli',
            ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
          });
          if (flags.json) printJson({ decided: outcome.decided, approval: outcome.view ?? null });
          if (outcome.decided) {
            if (!flags.json) process.stdout.write(`${ref}: ${outcome.view?.decision} by ${by}\n`);
            return;
          }
          // The loser of a race (or a late or wrong ref) is told what stands, and fails.
          process.exitCode = EXIT.failed;
          if (!flags.json) process.stderr.write(`idem: ${outcome.reason}\n`);
        });
      });
  }
}

async function withStore(flags: StoreFlags, work: (store: ExecutionStore) => Promise<void>): Promise<void> {
  const store = await openLocatedStore(locateStore(flags));
  try {
    await work(store);
  } finally {
    await store.close();
  }
}

function printView(view: ApprovalView): void {
  for (const [label, value] of [
    ['ref', view.ref],
    ['status', view.decision ?? 'pending'],
    ['state', view.state],
    ['tool', view.tool],
    ['actor', view.actor],
    ['session', view.session ?? '-'],
    ['target', `${view.channel}:${view.target}`],
    ['credential', view.credential ?? '-'],
    ['arguments', view.arguments],
    ['fingerprint', view.fingerprint],
    ['earlier', view.earlier ?? 'none (no earlier execution of this intent)'],
    ['policy', view.policy],
    ['requested', time(view.requestedAt)],
    ['expires', time(view.expiresAt)],
    [
      'decided',
      view.decidedAt === null ? '-' : `${time(view.decidedAt)} by ${view.decidedBy} via ${view.decidedVia}`,
    ],
    ['reason', view.reason ?? '-'],
  ] as const) {
    process.stdout.write(`${label.padEnd(12)}${value}\n`);
  }
}
