import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { AdmittingTransport } from '../receipts/receipt-transport.js';

/**
 * The stdio front, beside the HTTP front: one client on this process's stdin
 * and stdout (or the transport given), its messages through the receipt
 * layer (`wrap`) to the session that serves it (`attach`).
 */
export async function serveStdioFront<Session>(options: {
  transport?: Transport;
  wrap(transport: Transport): AdmittingTransport;
  attach(transport: AdmittingTransport): Promise<Session>;
}): Promise<Session> {
  const transport = options.transport ?? new StdioServerTransport();
  const wrapped = options.wrap(transport);
  const session = await options.attach(wrapped);
  answerBadLines(wrapped, transport);
  return session;
}

/**
 * The SDK's stdio transport drops a line that is not a JSON-RPC message and
 * only reports it; JSON-RPC 2.0 wants an answer with id null: -32700 for bad
 * JSON, -32600 for a bad message.
 */
function answerBadLines(wrapped: AdmittingTransport, transport: Transport): void {
  const reported = wrapped.onerror;
  wrapped.onerror = (error) => {
    const parse = error instanceof SyntaxError;
    if (parse || error.name === 'ZodError') {
      const message = parse
        ? 'Parse error: the line is not valid JSON'
        : 'Invalid Request: not a JSON-RPC 2.0 message';
      void transport
        .send({
          jsonrpc: '2.0',
          id: null,
          error: { code: parse ? -32700 : -32600, message },
        } as unknown as JSONRPCMessage)
        .catch(() => {});
    }
    reported?.(error);
  };
}
