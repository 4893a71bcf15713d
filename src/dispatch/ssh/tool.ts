import { resolveContract, type ToolContract } from '../../contracts/contract.js';
import { durationMs } from '../../contracts/duration.js';
import type { Credentials } from '../../credentials/index.js';
import type { ActionTool } from '../channel.js';
import { type SshHostSpec, type SshToolSpecConfigInput, SshToolSpecSchema } from './spec.js';
import { SshChannel } from './ssh-channel.js';

const DAY_MS = 24 * 60 * 60_000;

/** An SSH tool needs an execution id to name its marker: a read-only tool has none. Throws. */
export function refuseReadOnly(contract: ToolContract): void {
  if (contract.replay === 'read_only')
    throw new Error('replay read_only has no execution id to put in a marker; use keyed, status or review');
}

/** Every `{{placeholder}}` of the command must be an argument the schema (`where`) declares. Throws. */
export function refuseMissingArguments(
  ssh: SshChannel,
  argumentNames: readonly string[],
  where: string,
): void {
  const missing = ssh.template.placeholders.filter((p) => !argumentNames.includes(p));
  if (missing.length > 0)
    throw new Error(`the command uses {{${missing.join('}}, {{')}}}, which ${where} does not have`);
}

/**
 * An SSH action tool from its spec (as under `ssh_tools:`) and its inventory
 * host, the private key resolved by name through `credentials` at each run.
 * Throws, when the tool is made, for what no call could fix.
 */
export function sshActionTool(
  name: string,
  spec: SshToolSpecConfigInput,
  hosts: Readonly<Record<string, SshHostSpec>> | undefined,
  options: { credentials: Credentials },
): ActionTool {
  const parsed = SshToolSpecSchema.parse(spec);
  const hostName = parsed.host;
  const host = hosts?.[hostName];
  if (!host) throw new Error(`host "${hostName}" is not declared under ssh_hosts:`);
  if (!options.credentials.has(host.credential))
    throw new Error(
      `credential "${host.credential}" (of ssh_hosts.${hostName}) is not declared under credentials:`,
    );
  const contract: ToolContract = parsed.contract ?? { replay: 'keyed' };
  refuseReadOnly(contract);
  const retentionMs = durationMs(parsed.marker_retention, 'marker_retention');
  if (!Number.isInteger(retentionMs / DAY_MS) || retentionMs < DAY_MS)
    throw new Error('marker_retention must be whole days, at least 1 (e.g. "7d")');
  const ssh = new SshChannel(
    {
      host: {
        name: hostName,
        host: host.host,
        port: host.port,
        user: host.user,
        credential: host.credential,
        hostKey: host.host_key,
        ...(host.marker_dir ? { markerDir: host.marker_dir } : {}),
      },
      command: parsed.command,
      timeoutMs:
        parsed.timeout !== undefined
          ? durationMs(parsed.timeout, 'timeout')
          : resolveContract(contract, undefined).timeoutMs,
      connectTimeoutMs: durationMs(parsed.connect_timeout, 'connect_timeout'),
      okExitCodes: parsed.ok_exit_codes,
      outputLimitBytes: parsed.output_limit,
      markerRetentionDays: retentionMs / DAY_MS,
    },
    async (credential) => (await options.credentials.resolve(credential)).value,
    () => options.credentials.knownValues(),
  );
  const properties = (parsed.input_schema.properties ?? {}) as Record<string, unknown>;
  const missing = ssh.template.placeholders.filter((p) => !(p in properties));
  if (missing.length > 0)
    throw new Error(
      `the command uses {{${missing.join('}}, {{')}}}, which input_schema.properties does not have`,
    );
  return {
    name,
    description: parsed.description,
    inputSchema: { ...parsed.input_schema, type: 'object' } as ActionTool['inputSchema'],
    contract,
    channel: ssh,
  };
}
