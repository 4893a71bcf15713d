import { z } from 'zod';

/**
 * The config sections of what an operator looks at beside the gateway: the
 * web console (src/console) and the Prometheus endpoint (src/metrics). Both
 * are served by `idem gateway` on their own listeners, never on the MCP front:
 * their callers, their auth and their exposure are not the agents'.
 */

const hostPort = z
  .string()
  .regex(/^(\[[0-9A-Fa-f:.]+\]|[^:\s]+):\d{1,5}$/, 'expected host:port, e.g. 127.0.0.1:8788');

export const ConsoleConfigSchema = z
  .object({
    listen: hostPort.default('127.0.0.1:8788').describe('Where the console listens.'),
    token_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional()
      .describe('Environment variable holding the operator token. Default: IDEM_CONSOLE_TOKEN.'),
    token_file: z
      .string()
      .optional()
      .describe(
        'File holding the operator token (mode 0600, owned by the gateway user); wins over token_env.',
      ),
    allowed_hosts: z
      .array(z.string())
      .optional()
      .describe(
        'Host header values accepted. Default: the listen address, localhost and 127.0.0.1 on its port.',
      ),
  })
  .strict()
  .describe(
    'Serve the operator console (docs/console.md) from this gateway process, over its store. An operator token is always required.',
  );

export const MetricsConfigSchema = z
  .object({
    listen: hostPort
      .default('127.0.0.1:9464')
      .describe(
        'Where GET /metrics (Prometheus text format) is served, without auth: keep it on loopback or a private network.',
      ),
  })
  .strict()
  .describe('Serve Prometheus metrics of this gateway process (docs/metrics.md).');

export type ConsoleConfig = z.output<typeof ConsoleConfigSchema>;
export type MetricsConfig = z.output<typeof MetricsConfigSchema>;

/** `host:port` → its parts (brackets of an IPv6 host removed). */
export function splitHostPort(value: string): { host: string; port: number } {
  const match = /^(.*):(\d+)$/.exec(value);
  if (!match) throw new Error(`${value}: expected host:port`);
  return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port: Number(match[2]) };
}
