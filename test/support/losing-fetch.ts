/**
 * Fetch layers that lose responses, as a dropped connection would: the request
 * runs, its answer never reaches the agent.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { rpcOf } from '../../src/probe/losses.js';
import { messagesOf } from './raw-http.js';

/** A response that was received in full and then thrown away, as a dropped connection would. */
export interface LostResponse {
  tool: string;
  id: unknown;
  status: number;
  /** What the gateway had answered (so the test knows the call really ran). */
  body: string;
}

/**
 * A fetch that loses the first response to a `tools/call` of each tool in
 * `tools`: the request reaches the gateway and runs, its response is read to
 * the end and discarded. Then `afterLoss` runs (a test may change the world
 * there), and either the same POST is sent again (`resend`, same JSON-RPC id)
 * or the fetch fails like a broken network (`fail`), leaving the retry to the
 * agent.
 */
export function losingFetch(options: {
  tools: string[];
  mode: 'resend' | 'fail';
  afterLoss?: (lost: LostResponse) => Promise<void> | void;
  next?: FetchLike;
}): { fetch: FetchLike; lost: LostResponse[]; calls: { tool: string; id: unknown }[] } {
  const next = options.next ?? fetch;
  const pending = new Set(options.tools);
  const lost: LostResponse[] = [];
  const calls: { tool: string; id: unknown }[] = [];
  const wrapped: FetchLike = async (url, init) => {
    const rpc = rpcOf(init);
    const tool = rpc?.method === 'tools/call' ? String(rpc.params?.name) : undefined;
    if (tool !== undefined) calls.push({ tool, id: rpc?.id });
    if (tool === undefined || !pending.has(tool)) return next(url, init);
    pending.delete(tool);
    const first = await next(url, init);
    const loss: LostResponse = { tool, id: rpc?.id, status: first.status, body: await first.text() };
    lost.push(loss);
    await options.afterLoss?.(loss);
    if (options.mode === 'fail') throw new TypeError(`fetch failed: the response to ${tool} was lost`);
    calls.push({ tool, id: rpc?.id });
    return next(url, init);
  };
  return { fetch: wrapped, lost, calls };
}

/** The JSON-RPC result inside a lost response body (JSON or SSE). */
export function lostResult(loss: LostResponse): CallToolResult {
  const type = loss.body.trimStart().startsWith('{') ? 'application/json' : 'text/event-stream';
  const reply = messagesOf({ status: loss.status, headers: { 'content-type': type }, text: loss.body }).find(
    (m) => m.id === loss.id,
  );
  if (!reply?.result) throw new Error(`the lost response carried no result: ${loss.body}`);
  return reply.result as CallToolResult;
}
