import type { ResolvedContract, ToolContract } from '../contracts/contract.js';
import { InvalidInputError } from '../errors.js';
import type { Caller, Dispatch, ToolCall } from '../executions/call.js';
import { invalidInputAnswer } from '../executions/identify.js';
import type { ToolResult } from '../executions/outcome.js';
import type { ActionChannel } from './channel.js';

/**
 * One call of an action tool as the execution engine takes it: the channel,
 * target and credential NAME go into the canonical action record (so the
 * same arguments sent with another credential are another intent) and onto
 * the execution's journal; the dispatch hands the execution id to the channel.
 */
export function actionCall(
  tool: string,
  channel: ActionChannel,
  contract: ResolvedContract,
  args: Record<string, unknown>,
  caller: Caller,
  signal?: AbortSignal,
): { call: ToolCall; dispatch: Dispatch } {
  return {
    call: {
      tool,
      channel: channel.kind,
      target: channel.target,
      credentialRef: channel.credential,
      method: channel.method,
      arguments: args,
      contract,
      caller,
      ...(signal ? { signal } : {}),
    },
    dispatch: ({ executionId, redispatch }) =>
      channel.dispatch(args, {
        executionId,
        redispatch,
        ...(signal ? { signal } : {}),
      }),
  };
}

/**
 * An action tool's contract as declared, with the channel's own way of
 * learning an unknown outcome (the SSH marker) as its status probe where the
 * declaration has none.
 */
export function actionContract(
  declared: ToolContract | undefined,
  channel: ActionChannel,
): ToolContract | undefined {
  if (!declared || declared.status_probe || !channel.recover) return declared;
  return { ...declared, status_probe: channel.recover };
}

/**
 * The IDEM_INVALID_INPUT answer for arguments the channel could never carry
 * (`channel.check`), or undefined: asked before anything is claimed, so such
 * a call leaves no execution and sends nothing.
 */
export function refusedArguments(
  channel: ActionChannel,
  args: Record<string, unknown>,
): ToolResult | undefined {
  try {
    channel.check?.(args);
    return undefined;
  } catch (error) {
    if (error instanceof InvalidInputError) return invalidInputAnswer(error);
    throw error;
  }
}
