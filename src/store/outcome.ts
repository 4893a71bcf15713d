import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A tool result as MCP defines it; the stored outcome of an execution. */
export type ToolResult = CallToolResult;

/** What is kept of an execution's end: the result the target gave (or the operator's resolution). */
export interface StoredOutcome {
  result: ToolResult;
}
