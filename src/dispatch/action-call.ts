import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { ResolvedContract, ToolContract } from '../contracts/contract.js';
import { InvalidInputError } from '../errors.js';
import type { Caller, Dispatch, ToolCall } from '../executions/call.js';
import { invalidInputAnswer } from '../executions/identify.js';
import { tokenRefOf } from '../identity/actor.js';
import { requestKey } from '../identity/request-key.js';
import type { ToolResult } from '../store/outcome.js';
import type { ActionChannel } from './channel.js';

/** Who sent one `tools/call`, as the transport and its authentication established it. */
export interface CallOrigin {
  actor: string;
  /** The transport session; null where request ids have no session scope. */
  session: string | null;
  requestId: RequestId;
  /** The tool the request named (the status tool, for a repeat through it). */
  tool: string;
  /** The OAuth token's claims the request came with, if any. */
  authInfo?: AuthInfo | undefined;
}

/**
 * The caller of a `tools/call`, as the engine records it on the execution and
 * its journal: the actor, the session, the request (its key), and the OAuth
 * token (issuer, jti) when the call came with one. The gateway and the library
 * both build it here, so a call journals the same whichever received it.
 */
export function callerOf(origin: CallOrigin): Caller {
  const { actor, session } = origin;
  const token = tokenRefOf(origin.authInfo ? { authInfo: origin.authInfo } : {});
  return {
    actor,
    session,
    requestRef: requestKey({ actor, session, id: origin.requestId, method: 'tools/call', tool: origin.tool }),
    ...(token ? { token } : {}),
  };
}

/**
 * One call of a tool as the execution engine takes it, whatever performs it
 * (an upstream MCP server, HTTP, SSH, a library handler): the channel,
 * target (what the far side is, where the channel knows it: `server`) and credential NAME go into the canonical action record (so the
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
      ...(channel.server ? { server: channel.server } : {}),
      credentialRef: channel.credential,
      method: channel.method,
      arguments: args,
      contract,
      caller,
      ...(signal ? { signal } : {}),
      ...(channel.unresolved ? { unresolved: channel.unresolved } : {}),
      ...(channel.checksBeforeSending ? { checksBeforeSending: true } : {}),
    },
    dispatch: ({
      executionId,
      redispatch,
      signal: taskSignal,
      upstreamTask,
      askInput,
      askPushed,
      sending,
    }) => {
      // The caller's cancel, and its task's (tasks/cancel), both reach the channel.
      const cancelled = signal && taskSignal ? AbortSignal.any([signal, taskSignal]) : (signal ?? taskSignal);
      return channel.dispatch(args, {
        executionId,
        redispatch,
        ...(cancelled ? { signal: cancelled } : {}),
        ...(taskSignal ? { taskCancelled: taskSignal } : {}),
        ...(upstreamTask ? { upstreamTask } : {}),
        ...(askInput ? { askInput } : {}),
        ...(askPushed ? { askPushed } : {}),
        ...(sending ? { sending } : {}),
      });
    },
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
