// The MCP channel: connections to upstream MCP servers, and a tool call on one as an action channel.

export { UpstreamConnection } from './upstream.js';
export {
  UpstreamClosedError,
  UpstreamInvalidReplyError,
  UpstreamUnavailableError,
} from './upstream-errors.js';
export type {
  UpstreamHandlers,
  UpstreamLifecycle,
  UpstreamOptions,
  UpstreamReply,
  UpstreamRestart,
  UpstreamSpec,
} from './upstream-spec.js';
