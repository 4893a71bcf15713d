// The MCP channel: connections to upstream MCP servers, and a tool call on one as an action channel.
export { JSONRPC_ERROR_META, McpChannel, type McpToolCall, type ResendWith } from './mcp-channel.js';
export { recordedTaskFollower } from './resumed-task.js';
export { StdioUpstreamTransport } from './stdio-transport.js';
export { UpstreamConnection } from './upstream.js';
export type {
  UpstreamHandlers,
  UpstreamLifecycle,
  UpstreamOptions,
  UpstreamReply,
  UpstreamRestart,
  UpstreamSpec,
} from './upstream-spec.js';
export { heldStdioTransport } from './upstream-transport.js';
