import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCRequest, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { classifyInboundRequest } from '@modelcontextprotocol/server';
import { messageOf } from '../errors.js';
import { decodeHeaderValue } from '../protocol/param-headers.js';
import {
  ENVELOPE,
  envelopeOf,
  HEADER_MISMATCH,
  isModernVersion,
  MODERN_VERSIONS,
  UNSUPPORTED_PROTOCOL_VERSION,
  unsupportedVersionError,
} from '../protocol/revisions.js';
import type { AdmittingTransport } from '../receipts/receipt-transport.js';
import { ModernExchange } from './post-exchange.js';
import { rpcError, sendJson } from './replies.js';

export type EraOfRequest =
  | { kind: 'legacy' }
  | { kind: 'modern'; message: JSONRPCRequest | undefined }
  | { kind: 'reject'; status: number; reply: unknown };

/**
 * Which revision a POST speaks, by the v2 SDK's own classifier (body first:
 * a request whose `_meta` claims a protocol version is modern; the
 * `MCP-Protocol-Version` header only cross-checks). A refusal carries the
 * request's own id whenever it has one.
 */
export function classifyEra(req: IncomingMessage, body: unknown): EraOfRequest {
  const header = (name: string) => {
    const value = req.headers[name];
    return typeof value === 'string' ? value : undefined;
  };
  const protocolVersionHeader = header('mcp-protocol-version');
  const mcpMethodHeader = header('mcp-method');
  const mcpNameHeader = header('mcp-name');
  if (plainlyLegacy(body, protocolVersionHeader)) return { kind: 'legacy' };
  const outcome = classifyInboundRequest({
    httpMethod: 'POST',
    body,
    ...(protocolVersionHeader ? { protocolVersionHeader } : {}),
    ...(mcpMethodHeader ? { mcpMethodHeader } : {}),
    ...(mcpNameHeader ? { mcpNameHeader } : {}),
  });
  const id = idOf(body);
  if (outcome.kind === 'legacy') return { kind: 'legacy' };
  if (outcome.kind === 'reject')
    return {
      kind: 'reject',
      status: outcome.httpStatus,
      reply: rpcError(outcome.code, outcome.message, id, outcome.data),
    };
  if (outcome.messageKind === 'notification') return { kind: 'modern', message: undefined };
  const message = outcome.message;
  const version = outcome.classification.revision ?? envelopeOf(message.params).protocolVersion ?? '';
  if (!MODERN_VERSIONS.includes(version)) {
    return {
      kind: 'reject',
      status: 400,
      reply: { jsonrpc: '2.0', id: message.id, error: unsupportedVersionError(version) },
    };
  }
  // The revision requires the standard headers on every request POST (the classifier checks
  // only that present ones agree with the body).
  const named = namedBy(message);
  const missing = [
    protocolVersionHeader ? undefined : 'MCP-Protocol-Version',
    mcpMethodHeader ? undefined : 'Mcp-Method',
    named !== undefined && !mcpNameHeader ? 'Mcp-Name' : undefined,
  ].filter((h) => h !== undefined);
  if (missing.length > 0) {
    return {
      kind: 'reject',
      status: 400,
      reply: rpcError(HEADER_MISMATCH, `Missing required header(s): ${missing.join(', ')}`, message.id),
    };
  }
  // The classifier cross-checks the version and the method; the name is the entry's to check
  // (the SDK's own entry does it after classifying). Surrounding whitespace is not part of a value;
  // a name that is not plain ASCII comes Base64-encoded.
  if (named !== undefined && decodeHeaderValue(mcpNameHeader?.trim() ?? '') !== named) {
    return {
      kind: 'reject',
      status: 400,
      reply: rpcError(
        HEADER_MISMATCH,
        `Bad Request: the Mcp-Name header (${JSON.stringify(mcpNameHeader)}) does not match the body (${JSON.stringify(named)})`,
        message.id,
        { mismatch: { header: 'Mcp-Name', body: named } },
      ),
    };
  }
  return { kind: 'modern', message };
}

/**
 * What the SDK's classifier answers `legacy` for, told without it: a response, or a request or
 * notification other than `initialize` whose params claim no envelope (the protocol-version key in
 * `_meta`, whatever its value) under no modern `MCP-Protocol-Version` header. The classifier
 * runs a zod schema per message kind it tries (~50 µs a call, issue 30), and almost every POST
 * is one of these; everything else (batches, initialize, a claim, a modern header) still goes to it.
 * `body` has passed the front's `JSONRPCMessageSchema` check, so its members tell its kind.
 */
function plainlyLegacy(body: unknown, protocolVersionHeader: string | undefined): boolean {
  if (Array.isArray(body) || body === null || typeof body !== 'object') return false;
  if (!('method' in body)) return true;
  if (body.method === 'initialize') return false;
  const params = (body as { params?: unknown }).params;
  const meta = isPlainObject(params) ? params._meta : undefined;
  if (isPlainObject(meta) && ENVELOPE.protocolVersion in meta) return false;
  // The classifier strips HTTP's optional whitespace (spaces and tabs) before it compares.
  return (
    protocolVersionHeader === undefined ||
    !isModernVersion(protocolVersionHeader.replace(/^[ \t]+|[ \t]+$/g, ''))
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Which body field `Mcp-Name` mirrors, per method (SEP-2243; the tasks rows are
 * SEP-2663's, so that whatever routes HTTP can send every request for a task
 * to where its state is). The v2 SDK keeps the same table but does not export it.
 */
const MCP_NAME_SOURCE: Readonly<Record<string, 'name' | 'uri' | 'taskId'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** What `Mcp-Name` must carry for this request, if anything. */
function namedBy(message: JSONRPCRequest): string | undefined {
  const field = Object.hasOwn(MCP_NAME_SOURCE, message.method) ? MCP_NAME_SOURCE[message.method] : undefined;
  const value =
    field === undefined ? undefined : (message.params as Record<string, unknown> | undefined)?.[field];
  return typeof value === 'string' ? value : undefined;
}

function idOf(body: unknown): RequestId | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)) ? id : null;
}

/**
 * One modern request: its own exchange, receipts around it (ids have no
 * session scope), whatever serves it attached, then the request admitted —
 * a resend is answered from its receipt without reaching the gateway.
 */
export async function serveModernRequest(
  req: IncomingMessage & { auth?: AuthInfo },
  res: ServerResponse,
  era: { message: JSONRPCRequest | undefined },
  serve:
    | { wrap(transport: Transport): AdmittingTransport; attach(transport: AdmittingTransport): Promise<void> }
    | undefined,
): Promise<void> {
  // This revision defines no client notifications over HTTP: accepted, and nothing to do.
  if (era.message === undefined) {
    res.writeHead(202).end();
    return;
  }
  const request = era.message;
  if (!serve) {
    sendJson(
      res,
      400,
      rpcError(UNSUPPORTED_PROTOCOL_VERSION, 'This endpoint serves 2025-era revisions only', request.id, {
        supported: [],
      }),
    );
    return;
  }
  const exchange = new ModernExchange(req, res, request);
  const receipts = serve.wrap(exchange);
  try {
    await serve.attach(receipts);
  } catch (error) {
    // Nothing was received for this request (the upstreams could not be started): safe to retry.
    sendJson(
      res,
      503,
      rpcError(-32603, `The gateway could not serve this request: ${messageOf(error)}`, request.id),
    );
    return;
  }
  const admission = await receipts.admit(request, req.auth ? { authInfo: req.auth } : undefined);
  if (admission.kind === 'answer') {
    await exchange.send(admission.reply);
    await receipts.close();
    return;
  }
  exchange.deliver();
}
