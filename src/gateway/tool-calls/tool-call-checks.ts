import { IDEM_CODES } from '../../errors.js';
import { idemAnswer } from '../../executions/answers.js';
import { checkParamHeaders, paramHeadersFor, paramHeadersOf } from '../../protocol/param-headers.js';
import type { CatalogEntry } from '../catalog/catalog.js';
import type { SessionState } from '../sessions/session-state.js';
import { lookUpTool } from '../sessions/tools-list.js';
import type { ToolCallAnswer } from './answer.js';
import type { ToolCallRequest } from './tool-call-request.js';

// What a call is refused for before anything of it is recorded or run: each refusal is an
// answer the caller can act on, and none of them claims an execution.

type Refused = { refused: ToolCallAnswer };

/** The tool a call names, with the `Mcp-Param-*` headers its upstream gets (SEP-2243). */
export interface FoundTool {
  entry: CatalogEntry;
  upstreamHeaders: Record<string, string> | undefined;
}

/** The tool the call names, or why it cannot be called now. */
export async function findTool(s: SessionState, call: ToolCallRequest): Promise<FoundTool | Refused> {
  const { entry, unlisted } = await lookUpTool(s, call.name);
  const fault = s.ctx.configFault?.();
  if (fault) {
    return refusal(IDEM_CODES.IDEM_DENIED, {
      detail: `The gateway's config has an error, and it runs no tool until that is fixed: ${fault.message}`,
    });
  }
  if (!entry && unlisted.length > 0) {
    // The tool may belong to an upstream that is restarting: "Unknown tool" would tell a model it does not exist.
    return refusal(IDEM_CODES.IDEM_NOT_EXECUTED, {
      detail: `The tools of upstream ${unlisted.map((u) => `"${u}"`).join(', ')} could not be listed: it is down (restarting).`,
    });
  }
  if (!entry) return { refused: { error: { code: -32602, message: `Unknown tool: ${call.name}` } } };
  // SEP-2243: over HTTP a 2026-07-28 call mirrors the arguments its tool marks into headers, and a
  // disagreement is refused before anything is recorded or run.
  const marked = paramHeadersOf(entry.tool.inputSchema);
  const headers = call.headers;
  if (s.era === 'modern' && headers) {
    const mismatch = checkParamHeaders(marked, call.arguments, (h) => {
      const value = headers[h];
      return Array.isArray(value) ? value.join(', ') : value;
    });
    if (mismatch) return { refused: { error: mismatch } };
  }
  // A 2026-07-28 HTTP upstream checks these against the arguments, whoever the client is.
  return { entry, upstreamHeaders: paramHeadersFor(marked, call.arguments) };
}

/** The call's arguments, as the engine will identify them, or why they cannot be. */
export function checkArguments(
  call: ToolCallRequest,
  entry: CatalogEntry,
): { args: Record<string, unknown> } | Refused {
  let args: Record<string, unknown>;
  try {
    args = structuredClone(call.arguments ?? {}) as Record<string, unknown>;
  } catch {
    // Nesting deep enough to overflow the stack (JSON.parse accepts it): not an action anyone can identify.
    return refusal(IDEM_CODES.IDEM_INVALID_INPUT, {
      detail: `Invalid arguments for ${call.name}: nested too deeply to process.`,
    });
  }
  if (entry.validate && !entry.validate(args)) {
    const why = entry.validate.errors
      ?.map((e) => `${e.instancePath || '(arguments)'} ${e.message}`)
      .join('; ');
    return refusal(IDEM_CODES.IDEM_INVALID_INPUT, { detail: `Invalid arguments for ${call.name}: ${why}.` });
  }
  return { args };
}

function refusal(code: Parameters<typeof idemAnswer>[0], detail: Parameters<typeof idemAnswer>[1]): Refused {
  return { refused: { result: idemAnswer(code, detail) } };
}
