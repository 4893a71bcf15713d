import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { ResolvedContract } from './contract.js';

/**
 * The annotations Idem publishes for a tool: one rule for the gateway, the library and `idem lint`
 * (docs/contracts.md, "Published annotations: one rule"), a function of what the tool says of itself
 * and its contract's `replay` only — never of where the contract came from or of `after_completion`.
 * A tool that only reads keeps what it was given. Any other is published `readOnlyHint: false`, and
 * `idempotentHint` is the tool's own, said explicitly: Idem's deduplication covers the retries of one
 * intended call, but a deliberate repeat runs the tool again, so whether a repeat with the same
 * arguments has an additional effect is the tool's nature, which only its author knows.
 */
export function honestAnnotations(
  given: ToolAnnotations | undefined,
  contract: Pick<ResolvedContract, 'replay'>,
): ToolAnnotations | undefined {
  if (contract.replay === 'read_only') return given;
  return { ...given, readOnlyHint: false, idempotentHint: given?.idempotentHint === true };
}
