/**
 * A store that reads like an afternoon of an on-call engineer's console: calls
 * by a few agents to a few tools, made through the engine (its journal as a
 * gateway writes it), with repeats, an approval asked and one given, an
 * outcome gone unknown and one an operator resolved. The store's clock is the
 * story's, moved forward between steps, so durations and "ago" read as real.
 * Used by the console's browser tests and by scripts/console-screenshots.ts.
 */
import { randomBytes } from 'node:crypto';
import { decideAsOperator } from '../../src/approval/operator-decision.js';
import { resolveContract } from '../../src/contracts/contract.js';
import { idemCodeOf, META } from '../../src/executions/answers.js';
import type { ToolCall } from '../../src/executions/call.js';
import { ExecutionEngine } from '../../src/executions/engine.js';
import { resolveAsOperator } from '../../src/executions/operator.js';
import { Fingerprinter } from '../../src/identity/fingerprint.js';
import type { ToolResult } from '../../src/store/outcome.js';
import type { ExecutionStore } from '../../src/store/types.js';

/** A clock the story moves: the store's, the engine's and the console's. */
export class StoryClock {
  constructor(public now: number) {}
  readonly read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

export interface Story {
  engine: ExecutionEngine;
  /** Runs a call that succeeds after `tookMs` (the clock moves by it); returns its ref. */
  run(tool: string, actor: string, args: Record<string, unknown>, options?: RunOptions): Promise<string>;
  /** A call whose tool needs approval: returns its ref, waiting. */
  ask(tool: string, actor: string, args: Record<string, unknown>, requestRef?: string): Promise<string>;
  /** A call cancelled by its caller after it was sent: its outcome is unknown. */
  lose(
    tool: string,
    actor: string,
    args: Record<string, unknown>,
    replay?: 'keyed' | 'review',
  ): Promise<string>;
}

interface RunOptions {
  tookMs?: number;
  requestRef?: string;
  session?: string;
  text?: string;
  isError?: boolean;
}

const keyed = resolveContract({ replay: 'keyed', attach_window: '1h' }, undefined);
const reviewed = resolveContract({ replay: 'review', attach_window: '1h' }, undefined);
const approved = resolveContract(
  { replay: 'status', approval: 'every_call', attach_window: '1h', approval_timeout: '1h' },
  undefined,
);

export function story(store: ExecutionStore, clock: StoryClock): Story {
  const engine = new ExecutionEngine({
    store,
    fingerprinter: new Fingerprinter(randomBytes(32)),
    clock: clock.read,
  });
  const call = (
    tool: string,
    actor: string,
    args: Record<string, unknown>,
    contract = keyed,
    requestRef?: string,
    session = 'mcp-session-7f3a',
  ): ToolCall => ({
    tool,
    channel: tool.startsWith('github') ? 'http' : 'mcp',
    target: tool.split('.')[0] as string,
    credentialRef: tool.startsWith('payments') ? 'stripe-live' : null,
    method: 'tools/call',
    arguments: args,
    contract,
    caller: { actor, session, requestRef: requestRef ?? `req:${randomBytes(4).toString('hex')}` },
  });
  return {
    engine,
    async run(tool, actor, args, options = {}) {
      const answer = await engine.execute(
        call(tool, actor, args, keyed, options.requestRef, options.session),
        async () => {
          clock.advance(options.tookMs ?? 180);
          return {
            content: [{ type: 'text', text: options.text ?? JSON.stringify({ ok: true, ...args }) }],
            ...(options.isError ? { isError: true } : {}),
          };
        },
      );
      return answer._meta?.[META.executionId] as string;
    },
    async ask(tool, actor, args, requestRef) {
      const answer = await engine.execute(call(tool, actor, args, approved, requestRef), async () => ({
        content: [{ type: 'text', text: `${tool} done` }],
      }));
      if (idemCodeOf(answer) !== 'IDEM_AWAITING_APPROVAL')
        throw new Error(`expected a wait for approval, got ${idemCodeOf(answer)}`);
      return answer._meta?.[META.executionId] as string;
    },
    async lose(tool, actor, args, replay = 'keyed') {
      const controller = new AbortController();
      const answer = await engine.execute(
        { ...call(tool, actor, args, replay === 'review' ? reviewed : keyed), signal: controller.signal },
        async () => {
          clock.advance(2_500);
          // After the engine listens for the cancel (it does once the send has begun).
          setImmediate(() => controller.abort('the caller went away'));
          // The target never answers: the outcome stays unknown.
          return new Promise(() => {});
        },
      );
      return answer._meta?.[META.executionId] as string;
    },
  };
}

export interface Afternoon {
  /** An approved call that ran, then was repeated twice: the picture with everything on it. */
  approvedAndRepeated: string;
  /** Still waiting for an approval. */
  waiting: string[];
  /** Unknown, never resolved. */
  unknown: string;
  /** Was unknown, resolved by an operator. */
  resolved: string;
  /** A plain call and its repeat. */
  repeated: string;
  /** Its request id. */
  repeatedRequest: string;
}

const AGENTS = ['token:billing-agent', 'token:support-bot', 'user:alice@example.com'];
const TOOLS = ['payments.refund', 'mail.send', 'github.create_issue', 'crm.update_contact'];

/** The afternoon: `plain` ordinary calls, then the cases an operator looks at. */
export async function afternoon(store: ExecutionStore, clock: StoryClock, plain = 24): Promise<Afternoon> {
  const s = story(store, clock);
  for (let i = 0; i < plain; i++) {
    const tool = TOOLS[i % TOOLS.length] as string;
    const actor = AGENTS[i % AGENTS.length] as string;
    const args =
      tool === 'mail.send'
        ? { to: `customer-${i}@example.com`, subject: `Your ticket #${4100 + i}`, template: 'ticket-update' }
        : tool === 'payments.refund'
          ? {
              charge: `ch_3Q${(1000 + i).toString(36).toUpperCase()}x`,
              amount_cents: 1200 + i * 35,
              reason: 'duplicate',
            }
          : tool === 'github.create_issue'
            ? { repo: 'acme/billing', title: `Refund failed for order ORD-${7700 + i}`, labels: ['on-call'] }
            : { contact: `c_${800 + i}`, fields: { tier: i % 2 ? 'gold' : 'silver' } };
    await s.run(tool, actor, args, { tookMs: 90 + ((i * 137) % 1400) });
    clock.advance(40_000 + ((i * 7919) % 90_000));
  }
  const repeatedRequest = 'req:ticket-4242';
  const repeated = await s.run(
    'mail.send',
    'token:support-bot',
    { to: 'dana@example.com', subject: 'Your refund', template: 'refund-done' },
    { requestRef: repeatedRequest, tookMs: 640 },
  );
  clock.advance(1_700);
  await s.run('mail.send', 'token:support-bot', {
    to: 'dana@example.com',
    subject: 'Your refund',
    template: 'refund-done',
  });
  clock.advance(95_000);

  const resolved = await s.lose('payments.refund', 'token:billing-agent', {
    charge: 'ch_3QZK81x',
    amount_cents: 4999,
  });
  clock.advance(4 * 60_000);
  await resolveAsOperator(
    store,
    resolved,
    'completed',
    'operator:alice',
    'Stripe dashboard shows re_3QZK81 succeeded',
  );
  clock.advance(60_000);

  const approvedAndRepeated = await s.ask(
    'payments.refund',
    'token:billing-agent',
    { charge: 'ch_3QZP77x', amount_cents: 25_000, reason: 'customer request' },
    'req:refund-25000',
  );
  clock.advance(3 * 60_000 + 12_000);
  await decideAsOperator(store, approvedAndRepeated, 'approved', {
    by: 'operator:bob',
    via: 'console',
    reason: 'checked with finance',
  });
  clock.advance(9_000);
  const args = { charge: 'ch_3QZP77x', amount_cents: 25_000, reason: 'customer request' };
  // The approved refund sent again under other request ids: the first runs it, the later ones replay it.
  const refund = (requestRef: string, run: () => Promise<ToolResult>) =>
    s.engine.execute(
      {
        tool: 'payments.refund',
        channel: 'mcp',
        target: 'payments',
        credentialRef: 'stripe-live',
        method: 'tools/call',
        arguments: args,
        contract: approved,
        caller: { actor: 'token:billing-agent', session: 'mcp-session-7f3a', requestRef },
      },
      run,
    );
  const again = await refund('req:refund-25000-retry', async () => {
    clock.advance(1_240);
    return { content: [{ type: 'text', text: '{"refund":"re_3QZP77","status":"succeeded"}' }] };
  });
  if (again._meta?.[META.executionId] !== approvedAndRepeated)
    throw new Error('the approved call did not run as its execution');
  for (const wait of [14_000, 52_000]) {
    clock.advance(wait);
    await refund(`req:retry-${wait}`, async () => ({
      content: [{ type: 'text', text: 'must not run again' }],
    }));
  }
  clock.advance(70_000);
  const unknown = await s.lose('github.create_issue', 'user:alice@example.com', {
    repo: 'acme/infra',
    title: 'Rotate the staging database password',
  });
  clock.advance(45_000);
  const waiting = [
    await s.ask('payments.refund', 'token:billing-agent', {
      charge: 'ch_3QZR12x',
      amount_cents: 84_000,
      reason: 'chargeback',
    }),
    await s.ask('crm.delete_contact', 'user:alice@example.com', {
      contact: 'c_991',
      gdpr_request: 'GDPR-2211',
    }),
  ];
  clock.advance(25_000);
  return { approvedAndRepeated, waiting, unknown, resolved, repeated, repeatedRequest };
}
