import { z } from 'zod';

/** Credential names: what tools refer to, and what executions record. */
export const CREDENTIAL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** One credential's source. An object with one key, so that other kinds (a vault) can be added beside these. */
export const CredentialSourceConfig = z.union([
  z
    .object({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/) })
    .strict()
    .describe('An environment variable of the gateway, read at each call.'),
  z
    .object({ file: z.string().min(1) })
    .strict()
    .describe(
      "A file, mode 0600 or stricter and owned by the gateway's user (else the gateway refuses to start); one trailing newline is dropped.",
    ),
]);

export const CredentialsConfigSchema = z
  .record(z.string().regex(CREDENTIAL_NAME), CredentialSourceConfig)
  .describe(
    'Secrets that action tools use by name (credential: <name>). The model never sees or picks them; their values are scrubbed from every stored result, journal entry, log line and answer. Values shorter than 6 characters are refused.',
  );

export type CredentialsConfig = z.output<typeof CredentialsConfigSchema>;
