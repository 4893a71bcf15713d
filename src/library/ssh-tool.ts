import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { resolveContract, type ToolContract } from '../contracts/contract.js';
import {
  type ResolveCredential,
  refuseMissingArguments,
  refuseReadOnly,
  SshChannel,
  type SshToolSpec,
} from '../dispatch/ssh/index.js';
import type { IdemToolConfig, ZodShape } from './tool-config.js';

export interface IdemSshToolConfig<Shape extends ZodShape> {
  title?: string;
  description?: string;
  inputSchema: Shape;
  annotations?: ToolAnnotations;
  /** Default `{ replay: 'keyed' }`; the status probe is the marker, always. */
  contract?: Omit<ToolContract, 'status_probe'>;
  /** Host, command template and exit-code rule; the timeout is the contract's. */
  ssh: Omit<SshToolSpec, 'timeoutMs' | 'recordedMethod'>;
  /** Gives the private key for the host's credential name. */
  resolveCredential: ResolveCredential;
}

/**
 * What `Idem.sshTool` registers: the tool's config, its contract defaulting
 * to `keyed`, and the SSH channel that performs it (whose marker is the
 * status probe, and which checks the arguments against the command template
 * before anything is claimed). Throws, when the tool is made, for what no
 * call could fix.
 */
export function sshToolChannel<Shape extends ZodShape>(
  name: string,
  config: IdemSshToolConfig<Shape>,
): { config: IdemToolConfig<Shape>; channel: SshChannel } {
  const { ssh, resolveCredential, contract, ...toolConfig } = config;
  const declared: ToolContract = { replay: 'keyed', ...contract };
  try {
    refuseReadOnly(declared);
    const channel = new SshChannel(
      {
        ...ssh,
        timeoutMs: resolveContract(declared, config.annotations).timeoutMs,
        // As the library recorded its SSH tools before they ran as a channel: their fingerprints stay.
        recordedMethod: 'tools/call',
      },
      resolveCredential,
    );
    refuseMissingArguments(channel, Object.keys(config.inputSchema), 'inputSchema');
    return { config: { ...toolConfig, contract: declared }, channel };
  } catch (error) {
    throw new Error(`ssh tool "${name}": ${(error as Error).message}`);
  }
}
