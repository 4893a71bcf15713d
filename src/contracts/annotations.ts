import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { ResolvedContract } from './contract.js';

/**
 * Annotations follow the code (docs/contracts.md), one rule for the gateway and the
 * library: `idempotentHint: true` only where a declared contract makes a
 * repeat harmless (a repeat after a result replays it). A claim without such a
 * contract is withdrawn: the cautious default still runs a call again once its
 * attach window has passed, and `after_completion: new` makes every repeat a
 * deliberate new action. A tool that only reads keeps what it was given.
 */
export function honestAnnotations(
  given: ToolAnnotations | undefined,
  contract: ResolvedContract,
  // Without the option (the public export's old two-argument form): declared unless resolved from nothing.
  { contractDeclared = !contract.defaulted }: { contractDeclared?: boolean } = {},
): ToolAnnotations | undefined {
  if (contract.replay === 'read_only') return given;
  return {
    ...given,
    readOnlyHint: false,
    idempotentHint: contractDeclared && contract.afterCompletion === 'replay',
  };
}
