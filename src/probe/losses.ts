/**
 * Lost answers, as a connection dropped on the way back loses them: the call
 * was written by the target and read to its end by the client, then dropped.
 * The call ran; nothing races. One home for the probe's agent (agent.ts) and
 * the test suite's replay-honesty agent.
 *
 * A planned loss names a tool call (its name and arguments); the next
 * `tools/call` that matches is taken off the list and its answer lost:
 * - over Streamable HTTP (`losingFetch`): `lose` makes the fetch fail like a
 *   reset connection; `resend` sends the very same POST again (same JSON-RPC
 *   id, same session) after `beforeResend`;
 * - over stdio (`droppingStdio`): the answer is dropped before the client reads
 *   it; `resend` sends the same message again, `lose` tells `dropped` (the
 *   caller decides what the client sees: an abort, the agent's death…).
 */
import { isDeepStrictEqual } from 'node:util';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

type Args = Record<string, unknown>;

export interface PlannedLoss {
  tool: string;
  args: Args;
  mode: 'lose' | 'resend';
  /** resend: runs once the answer was lost, before the same message goes again (a step of a clock…). */
  beforeResend?: () => void | Promise<void>;
  /** stdio, lose: told when the answer arrived and was dropped. */
  dropped?: () => void;
}

/** What a loss (or a test's fetch layer) reads of a JSON-RPC message. */
export interface RpcSummary {
  id?: unknown;
  method?: string;
  params?: { name?: unknown; arguments?: unknown };
}

/** The JSON-RPC message in a fetch `init.body`, if it is one (the SDK sends strings). */
export function rpcOf(init: RequestInit | undefined): RpcSummary | undefined {
  if (typeof init?.body !== 'string') return undefined;
  try {
    const parsed = JSON.parse(init.body) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as RpcSummary)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The planned loss a `tools/call` message matches, taken off the list (undefined: none). */
export function takeLoss(losses: PlannedLoss[], message: unknown): PlannedLoss | undefined {
  const rpc = message as RpcSummary | undefined;
  if (rpc?.method !== 'tools/call') return undefined;
  const at = losses.findIndex(
    (l) => l.tool === rpc.params?.name && isDeepStrictEqual(l.args, rpc.params?.arguments ?? {}),
  );
  return at < 0 ? undefined : losses.splice(at, 1)[0];
}

/** Over Streamable HTTP: the response to a call with a planned loss is read to its end, then lost. */
export function losingFetch(losses: PlannedLoss[], next: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const loss = takeLoss(losses, rpcOf(init));
    if (!loss) return next(url, init);
    const first = await next(url, init);
    await first.text();
    if (loss.mode === 'lose') throw new TypeError(`fetch failed: the response to ${loss.tool} was lost`);
    await loss.beforeResend?.();
    return next(url, init);
  };
}

/** Over stdio (any transport whose handlers are set): the answer to a call with a planned loss is dropped. */
export function droppingStdio(transport: Transport, losses: PlannedLoss[]): void {
  const doomed = new Map<unknown, { loss: PlannedLoss; message: Parameters<Transport['send']>[0] }>();
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    const loss = takeLoss(losses, message);
    if (loss && 'id' in message) doomed.set(message.id, { loss, message });
    return send(message, options);
  };
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const entry = 'id' in message ? doomed.get(message.id) : undefined;
    if (entry && ('result' in message || 'error' in message)) {
      doomed.delete(message.id);
      const { loss } = entry;
      if (loss.mode === 'resend')
        void Promise.resolve(loss.beforeResend?.())
          .then(() => send(entry.message))
          .catch(() => {});
      else loss.dropped?.();
      return;
    }
    deliver?.(message, extra);
  };
}
