/**
 * Idem — execution identity for MCP tool calls.
 * The public face of the package, what `import … from 'idem'` gives (docs/library.md, "The
 * package's face"): the library and what its methods take, what a channel author implements,
 * a store by kind, and the errors a user meets with their codes. Everything else is internal;
 * src/index.test.ts pins this list.
 */

// A contract, and the status probe it may name (docs/contracts.md).
export type { ProbeAnswer, StatusProbe, ToolContract } from './contracts/contract.js';
// What a channel author implements, and what one dispatch is told (docs/channels.md).
export type { ActionChannel, ActionDispatch } from './dispatch/channel.js';
// The errors that reach a library user or a channel, each with its stable code (docs/errors.md).
export {
  CredentialError,
  DispatchRefusedError,
  IDEM_CODES,
  type IdemCode,
  IdemError,
  InvalidInputError,
  MissingPackageError,
  NotDispatchedError,
  OutcomeUnknownError,
  StoreRefusedError,
  StoreUnavailableError,
} from './errors.js';
// What `Idem.open` takes besides the store, and what a handler is told (`extra.idem`).
export type {
  Approver,
  ApproverAnswer,
  ApproverRequest,
  DispatchContext,
  Logger,
} from './executions/call.js';
// The library.
export { type ServedHttp, serveStreamableHttp } from './library/http.js';
export { Idem, type IdemOptions } from './library/idem.js';
export type { IdemSshToolConfig } from './library/ssh-tool.js';
export type {
  IdemHttpToolConfig,
  IdemToolConfig,
  IdemToolExtra,
  IdemToolHandler,
} from './library/tool-config.js';
// A store by kind, for a store shared by several `Idem`s (else `Idem.open({ store: spec })` opens it).
export { type ExecutionStore, openStore, type StoreSpec } from './store/index.js';
// What a handler or a channel answers.
export type { ToolResult } from './store/outcome.js';
