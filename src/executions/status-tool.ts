import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { STATUS_ACTION_DESCRIPTION, STATUS_TOOL_ANNOTATIONS, STATUS_TOOL_DESCRIPTION } from './answers.js';

/**
 * The status tool, defined once for the gateway and the library: its title,
 * text, annotations and the rules for its arguments. The zod shape is the
 * source; the gateway publishes the JSON Schema derived from it and checks
 * arguments against the same shape, the library registers the shape with the
 * SDK.
 */
export const STATUS_TOOL_TITLE = 'Status of an earlier action, or a deliberate repeat';

export const STATUS_TOOL_INPUT = {
  ref: z.string().min(1).max(128).describe('The execution ref (exe_…) from an earlier answer'),
  action: z.enum(['status', 'repeat']).default('status').describe(STATUS_ACTION_DESCRIPTION),
};

export interface StatusArguments {
  ref: string;
  action: 'status' | 'repeat';
}

/** The tool as a JSON Schema definition (for a server that answers tools/list itself, like the gateway). */
export function statusToolDefinition(name: string): Tool {
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(z.object(STATUS_TOOL_INPUT), { io: 'input' });
  return {
    name,
    title: STATUS_TOOL_TITLE,
    description: STATUS_TOOL_DESCRIPTION,
    inputSchema: inputSchema as Tool['inputSchema'],
    annotations: STATUS_TOOL_ANNOTATIONS,
  };
}

/** Checks a call's arguments; a problem comes back as the text that tells the caller what to pass. */
export function parseStatusArguments(args: unknown): StatusArguments | { problem: string } {
  const { ref, action } = (args ?? {}) as { ref?: unknown; action?: unknown };
  const parsedRef = STATUS_TOOL_INPUT.ref.safeParse(ref);
  if (!parsedRef.success) return { problem: 'Pass {"ref": "exe_…"} from an earlier answer.' };
  const parsedAction = STATUS_TOOL_INPUT.action.safeParse(action);
  if (!parsedAction.success) return { problem: '"action" is "status" (the default) or "repeat".' };
  return { ref: parsedRef.data, action: parsedAction.data };
}
