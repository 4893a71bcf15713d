import { businessKeyValue, intentScopeValue } from '../contracts/scope.js';
import { IDEM_CODES, InvalidInputError } from '../errors.js';
import { prepareArguments } from '../identity/arguments.js';
import type { Fingerprinter } from '../identity/fingerprint.js';
import type { ToolResult } from '../store/outcome.js';
import { idemAnswer } from './answers.js';
import type { CallIdentity, ToolCall } from './call.js';

/** The intent fingerprint, request digest and redacted preview of a call. Throws InvalidInputError. */
export function identify(fingerprinter: Fingerprinter, clock: () => number, call: ToolCall): CallIdentity {
  const prepared = prepareArguments(call.arguments, call.contract.argumentRules, fingerprinter);
  const scope = call.contract.scope;
  const intentScope =
    call.idempotencyKey !== undefined
      ? { kind: 'idempotency_key', key: call.idempotencyKey }
      : intentScopeValue(call.contract.scope, prepared.forFingerprint, {
          session: call.caller.session,
          now: clock(),
        });
  // What the far side is, not the operator's handle for it: two servers behind one name never share an intent.
  const target = call.server ?? call.target;
  const fingerprint = fingerprinter.intent({
    actor: call.caller.actor,
    tool: call.tool,
    channel: call.channel,
    target,
    credential_ref: call.credentialRef,
    method: call.method,
    arguments: prepared.forFingerprint,
    intent_scope: intentScope,
  });
  if (scope.kind === 'business_key' && call.idempotencyKey === undefined) {
    // The key names the action: the other arguments are left out of what is claimed, and the
    // whole request's fingerprint goes with it to tell a repeat from another use of the key.
    const named = fingerprinter.businessKey({
      actor: scope.shared ? null : call.caller.actor,
      tool: call.tool,
      channel: call.channel,
      target,
      credential_ref: call.credentialRef,
      method: call.method,
      key: { path: scope.path, value: businessKeyValue(scope.path, prepared.forFingerprint) },
    });
    return { fingerprint: named, requestDigest: fingerprint, preview: prepared.preview };
  }
  return { fingerprint, requestDigest: null, preview: prepared.preview };
}

/** Runs `identify`; input it refuses becomes the answer that says what to fix, and nothing is claimed. */
export function identifiedOrRefused(identify: () => CallIdentity): CallIdentity | { refused: ToolResult } {
  try {
    return identify();
  } catch (error) {
    if (error instanceof InvalidInputError) return { refused: invalidInputAnswer(error) };
    throw error;
  }
}

/** The answer to input that cannot be processed: what is wrong, where, and that nothing ran. */
export function invalidInputAnswer(error: InvalidInputError): ToolResult {
  return idemAnswer(IDEM_CODES.IDEM_INVALID_INPUT, { detail: `${error.reason}: ${error.message}` });
}
