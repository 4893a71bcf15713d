import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpToolCall } from '../../dispatch/mcp/index.js';
import type { TaskRequest } from '../../executions/call.js';
import type { CatalogEntry } from '../catalog/catalog.js';
import type { ForwardedRequest } from '../sessions/session-state.js';
import type { ToolCallAnswer } from './answer.js';
import type { ToolCallRequest } from './tool-call-request.js';

/**
 * What the pipeline leaves to the protocol-revision bridge that wraps it
 * (revision-bridge/bridge.ts): a client of one revision family may meet an
 * upstream of the other, and the input it is asked for mid-call crosses
 * between them there. The pipeline knows where these points are, not what
 * happens at them.
 */
export interface RevisionHooks {
  /**
   * Whether this client can take an MCP task for the call, said its revision's way (docs/tasks.md);
   * or, for a tool that requires one, the refusal of a client that cannot.
   */
  taskOf(call: ToolCallRequest, entry: CatalogEntry): { task?: TaskRequest } | { refused: ToolCallAnswer };
  /** The call continues an open input round: it is answered by that round, and nothing new is claimed. */
  continuing(call: ToolCallRequest, args: Record<string, unknown>): Promise<ToolCallAnswer> | undefined;
  /** How the upstream's own requests for input reach this client, on the call's MCP channel. */
  channelHooks(
    forwarded: ForwardedRequest,
    entry: CatalogEntry,
  ): Pick<McpToolCall, 'answerRounds' | 'inputRequired'>;
  /**
   * Called before the call's execution starts (the upstream may ask for input as soon as it has
   * the call, so an input round is opened first); returns how the running execution is answered.
   */
  answering(
    call: ToolCallRequest,
    entry: CatalogEntry,
    args: Record<string, unknown>,
    forwarded: ForwardedRequest,
  ): (execution: Promise<CallToolResult>) => Promise<ToolCallAnswer>;
  /** A finished call's result, as this client's revision takes it. */
  answer(result: CallToolResult, forwarded: ForwardedRequest): ToolCallAnswer;
}
