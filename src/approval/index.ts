/** Authorization and approval (docs/approvals.md): the ladder, decisions, and what an approver sees. */
export { type Decider, decideApproval, expireIfDue, expirePending } from './decide.js';
export {
  APPROVAL_FORM,
  approvalElicitation,
  decisionOfElicitation,
  elicitationAllowed,
} from './elicitation-form.js';
export {
  evaluateLadder,
  LADDER_STEPS,
  type LadderInput,
  type LadderStep,
  type LadderVerdict,
} from './ladder.js';
export { type ApprovalView, approvalMessage, approvalView, loadApprovalView } from './view.js';
