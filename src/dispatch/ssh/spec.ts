import { z } from 'zod';
import { ToolContractSchema } from '../../contracts/contract.js';
import { DurationSchema } from '../../contracts/duration.js';
import { CREDENTIAL_NAME } from '../../credentials/config.js';
import { SSH_MARKER_DIR } from '../../defaults.js';

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** One host of the SSH inventory, as the gateway config declares it under `ssh_hosts:` (docs/channels-ssh.md). */
export const SshHostSpecSchema = z
  .object({
    host: z.string().min(1).describe('Address or DNS name of the host.'),
    port: z.number().int().min(1).max(65535).default(22),
    user: z.string().min(1),
    credential: z
      .string()
      .regex(CREDENTIAL_NAME)
      .describe('NAME of the credential (under credentials:) holding the private key; never the key itself.'),
    host_key: z
      .string()
      .regex(/^SHA256:[A-Za-z0-9+/]{43}$/, 'the SHA256 fingerprint as `ssh-keygen -l` prints it')
      .describe(
        'The host key fingerprint (`ssh-keyscan -t ed25519 <host> | ssh-keygen -lf -`). Any other key is refused; there is no "accept new".',
      ),
    marker_dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        `Where execution markers live on the host, used literally (no ~ or $VAR); relative to the user's home. Default ${SSH_MARKER_DIR}.`,
      ),
  })
  .strict();

/** One SSH action tool, as the gateway config declares it under `ssh_tools:` (docs/channels-ssh.md). */
export const SshToolSpecSchema = z
  .object({
    description: z.string().min(1),
    input_schema: z
      .record(z.string(), z.json())
      .default({ type: 'object' })
      .describe('JSON Schema of the arguments (type: object); validated before anything is claimed.'),
    host: z.string().regex(NAME).describe('The inventory name of the host (under ssh_hosts:).'),
    command: z
      .string()
      .min(1)
      .describe(
        'Shell command template: {{name}} becomes that argument as exactly one quoted shell word. Run under sh -c on the host.',
      ),
    ok_exit_codes: z
      .array(z.number().int().min(0).max(255))
      .min(1)
      .default([0])
      .describe('Exit codes that mean success; any other is a failure the host reported.'),
    timeout: DurationSchema.optional().describe(
      'After the command was sent: no answer by then → unknown. Default: the contract timeout.',
    ),
    connect_timeout: DurationSchema.default('10s').describe(
      'For the credential, the TCP connection and the login, each: past it nothing was sent.',
    ),
    output_limit: z
      .number()
      .int()
      .min(0)
      .default(65_536)
      .describe('Bytes kept (and returned) of the end of stdout and of stderr.'),
    marker_retention: DurationSchema.default('7d').describe(
      'Finished markers older than this (whole days, at least 1) are removed from the host.',
    ),
    contract: ToolContractSchema.omit({ status_probe: true })
      .strict()
      .optional()
      .describe(
        'Default { replay: keyed }: the marker makes a re-send run at most once. The status probe is always the marker.',
      ),
  })
  .strict();

export type SshHostSpec = z.output<typeof SshHostSpecSchema>;
export type SshToolSpecConfig = z.output<typeof SshToolSpecSchema>;
export type SshToolSpecConfigInput = z.input<typeof SshToolSpecSchema>;

export const SshHostsConfigSchema = z
  .record(z.string().regex(NAME), SshHostSpecSchema)
  .describe('The SSH inventory: hosts that ssh_tools run on, by name (docs/channels-ssh.md).');

export const SshToolsConfigSchema = z
  .record(z.string().regex(NAME), SshToolSpecSchema)
  .describe('SSH action tools by the name clients see (docs/channels-ssh.md).');
