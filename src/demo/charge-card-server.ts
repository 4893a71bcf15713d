import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { OutcomeUnknownError } from '../errors.js';
import type { Idem } from '../library/idem.js';
import type { Charge } from './processor.js';

export interface ChargeCardServerOptions {
  idem: Idem;
  /** Base URL of the payment processor. */
  processorUrl: string;
  /** When an unanswered charge becomes `unknown` for the agent (the charge itself goes on). */
  timeout?: string | number;
  /** The same for `charge_card_quick`, the tool whose caller will not wait long (default 300 ms). */
  quickTimeout?: string | number;
}

/** The checkout's tool: an answer within a moment, or "unknown" while the charge goes on. */
export const QUICK_TIMEOUT = '300ms';

/**
 * The example MCP server built with the library: a `charge_card` tool whose
 * execution id travels to the processor as its `Idempotency-Key`, so even a
 * re-sent charge is charged once; and `charge_card_quick`, the same charge for
 * a caller that is told "unknown" after a short timeout instead of waiting.
 */
export function createChargeCardServer(options: ChargeCardServerOptions): McpServer {
  const server = new McpServer({ name: 'charge-card-example', version: '1.0.0' });
  registerCharge(server, options, {
    name: 'charge_card',
    title: 'Charge a card',
    description: 'Charge a card for an order. One order is charged once, however often this is called.',
    timeout: options.timeout,
  });
  registerCharge(server, options, {
    name: 'charge_card_quick',
    title: 'Charge a card, answer at once',
    description:
      'Charge a card for an order at a checkout that cannot wait: past a short timeout the answer is "unknown" while the charge goes on; ask the status tool. One order is charged once.',
    timeout: options.quickTimeout ?? QUICK_TIMEOUT,
  });
  return server;
}

function registerCharge(
  server: McpServer,
  options: ChargeCardServerOptions,
  tool: { name: string; title: string; description: string; timeout: string | number | undefined },
): void {
  options.idem.tool(
    server,
    tool.name,
    {
      title: tool.title,
      description: tool.description,
      inputSchema: {
        order_id: z.string().min(1).describe('The order being paid; one order is one charge'),
        amount_cents: z.number().int().positive(),
        currency: z.string().length(3).default('EUR'),
        card_number: z.string().min(12).max(19).meta({ writeOnly: true }).describe('Card number (secret)'),
      },
      annotations: { destructiveHint: false, openWorldHint: true },
      contract: {
        replay: 'keyed',
        scope: { business_key: 'order_id' },
        attach_window: '24h',
        ...(tool.timeout !== undefined ? { timeout: tool.timeout } : {}),
        status_probe: async ({ executionId }) => {
          const res = await fetch(`${options.processorUrl}/charges/${encodeURIComponent(executionId)}`);
          if (res.status === 404) return { outcome: 'unknown' };
          if (!res.ok) return { outcome: 'unknown' };
          return { outcome: 'completed', result: chargeResult((await res.json()) as Charge) };
        },
      },
    },
    async ({ order_id, amount_cents, currency }, extra) => {
      let res: Response;
      try {
        res = await fetch(`${options.processorUrl}/charges`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': extra.idem.executionId ?? '' },
          body: JSON.stringify({ order_id, amount_cents, currency }),
        });
      } catch (error) {
        // The request may have reached the processor: that is "unknown", not "failed".
        throw new OutcomeUnknownError(`processor unreachable mid-request: ${String(error)}`);
      }
      if (!res.ok) {
        return {
          isError: true,
          content: [{ type: 'text', text: `The processor refused the charge (${res.status}).` }],
        };
      }
      return chargeResult((await res.json()) as Charge);
    },
  );
}

function chargeResult(charge: Charge) {
  return {
    content: [
      {
        type: 'text' as const,
        text: `Charged ${(charge.amount_cents / 100).toFixed(2)} ${charge.currency} for order ${charge.order_id} (${charge.charge_id}).`,
      },
    ],
    structuredContent: { ...charge },
  };
}
