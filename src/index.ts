/**
 * Idem — execution identity for MCP tool calls.
 * The public face of the package: what library users import.
 */

export {
  type ApprovalView,
  approvalView,
  type Decider,
  decideApproval,
  evaluateLadder,
  expireIfDue,
  expirePending,
  LADDER_STEPS,
  type LadderStep,
  loadApprovalView,
} from './approval/index.js';
export {
  type ApprovalPolicy,
  type IntentScope,
  type ProbeAnswer,
  type ReplayClass,
  type ResolvedContract,
  resolveContract,
  type StatusProbe,
  type ToolContract,
  ToolContractSchema,
} from './contracts/contract.js';
// What a channel author implements (docs/channels.md), and what it is told about one dispatch.
export type { ActionChannel, ActionDispatch, ActionTool } from './dispatch/channel.js';
export {
  hostKeyFingerprint,
  type ResolveCredential,
  SshChannel,
  type SshHost,
  type SshToolSpec,
} from './dispatch/ssh/index.js';
export {
  ConfigError,
  ConsoleTokenError,
  CredentialError,
  DispatchRefusedError,
  IDEM_CODES,
  type IdemCode,
  IdemError,
  INVALID_INPUT_REASONS,
  InvalidInputError,
  type InvalidInputReason,
  IssuerMetadataError,
  MissingPackageError,
  NotDispatchedError,
  NotWrittenError,
  OPERATOR_CODES,
  OPTIONAL_PACKAGES,
  type OperatorCode,
  type OptionalPackage,
  OutcomeUnknownError,
  STORE_REFUSAL_REASONS,
  type StoreRefusalReason,
  StoreRefusedError,
  StoreUnavailableError,
  UpstreamClosedError,
  UpstreamInvalidReplyError,
  UpstreamUnavailableError,
} from './errors.js';
export { type IdemAnswerInfo, idemAnswer, idemCodeOf, META } from './executions/answers.js';
export type {
  Approver,
  ApproverAnswer,
  ApproverRequest,
  Caller,
  Dispatch,
  DispatchContext,
  Logger,
  ToolCall,
} from './executions/call.js';
export { ExecutionEngine, type ExecutionEngineOptions } from './executions/engine.js';
export { EXECUTION_STATES, type ExecutionState } from './executions/states.js';
export { Fingerprinter } from './identity/index.js';
export { type ServedHttp, serveStreamableHttp } from './library/http.js';
export { honestAnnotations } from './contracts/annotations.js';
export { Idem, type IdemOptions } from './library/idem.js';
export type { IdemSshToolConfig } from './library/ssh-tool.js';
export type { IdemToolConfig, IdemToolExtra, IdemToolHandler } from './library/tool-config.js';
export { ReceiptBook, type ReceiptBookOptions } from './receipts/receipt-book.js';
export { type IdScope, ReceiptTransport } from './receipts/receipt-transport.js';
export * from './store/index.js';
export type { StoredOutcome, ToolResult } from './store/outcome.js';
