import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { resolveContract, type ToolContract } from '../contracts/contract.js';
import {
  type ResolveCredential,
  refuseMissingArguments,
  refuseReadOnly,
  SshChannel,
  type SshToolSpec,
} from '../dispatch/ssh/index.js';
import { InvalidInputError } from '../errors.js';
import { invalidInputAnswer } from '../executions/identify.js';
import type { IdemToolConfig, IdemToolHandler, ToolOrigin, ZodShape } from './idem.js';

export interface IdemSshToolConfig<Shape extends ZodShape> {
  title?: string;
  description?: string;
  inputSchema: Shape;
  annotations?: ToolAnnotations;
  /** Default `{ replay: 'keyed' }`; the status probe is the marker, always. */
  contract?: Omit<ToolContract, 'status_probe'>;
  /** Host, command template and exit-code rule; the timeout is the contract's. */
  ssh: Omit<SshToolSpec, 'timeoutMs'>;
  /** Gives the private key for the host's credential name. */
  resolveCredential: ResolveCredential;
}

/**
 * What `Idem.sshTool` registers: the tool as an idempotent tool whose handler
 * is the SSH channel, whose status probe is the marker, and whose arguments
 * are checked against the command template before anything is claimed.
 * Throws, when the tool is made, for what no call could fix.
 */
export function sshToolParts<Shape extends ZodShape>(
  name: string,
  config: IdemSshToolConfig<Shape>,
): { config: IdemToolConfig<Shape>; handler: IdemToolHandler<Shape>; origin: ToolOrigin } {
  const { ssh, resolveCredential, contract, ...toolConfig } = config;
  const declared: ToolContract = { replay: 'keyed', ...contract };
  let channel: SshChannel;
  try {
    refuseReadOnly(declared);
    channel = new SshChannel(
      { ...ssh, timeoutMs: resolveContract(declared, config.annotations).timeoutMs },
      resolveCredential,
    );
    refuseMissingArguments(channel, Object.keys(config.inputSchema), 'inputSchema');
  } catch (error) {
    throw new Error(`ssh tool "${name}": ${(error as Error).message}`);
  }
  return {
    config: {
      ...toolConfig,
      contract: { ...declared, status_probe: ({ executionId }) => channel.probe(executionId) },
    },
    // Not read-only (refused above), so the engine always hands over an execution id.
    handler: (args, extra) => channel.dispatch(extra.idem.executionId as string, channel.command(args)),
    origin: {
      channel: channel.channel,
      target: channel.target,
      credentialRef: channel.credentialRef,
      // Refused before anything is claimed or sent: the caller fixes the arguments and calls again.
      refuse: (args) => {
        try {
          channel.command(args as Record<string, unknown>);
          return undefined;
        } catch (error) {
          if (error instanceof InvalidInputError) return invalidInputAnswer(error);
          throw error;
        }
      },
    },
  };
}
