import { z } from 'zod';
import { UPSTREAM_ENV_INHERIT } from '../../defaults.js';

/** The `upstreams:` section's two shapes: a command (stdio) or a URL (Streamable HTTP or HTTP+SSE). */

/** `share:`, the same for a command and a URL upstream (docs/protocol.md). */
const ShareSchema = z
  .boolean()
  .optional()
  .describe(
    'One connection (one process, for a command) for every stateful HTTP and stdio session, instead of one per session. Only for servers that keep no per-client state: the upstream sees one client (the gateway), logging/setLevel is shared, resources/subscribe is refused, and a request it makes of a client (elicitation, sampling, roots) reaches one only when exactly one call is in flight on it (docs/protocol.md). Default false.',
  );

/** `identity:`, the same for a command and a URL upstream (docs/gateway.md, "What is the same server"). */
const IdentitySchema = z
  .string()
  .min(1)
  .optional()
  .describe(
    "What this server is, named by the operator: when given, it alone is the server's identity in every call's fingerprint, instead of its command, arguments, cwd and environment (or URL and headers). Give two upstreams one identity to say they are the same server (across a move, a new command, another gateway); never give two different servers one identity, or one's stored result answers the other's calls. Default: derived from what runs (docs/gateway.md).",
  );

/** Which environment of a stdio upstream names the server (`identity_env`). */
export const IDENTITY_ENV = ['declared', 'inherited'] as const;

/** An upstream MCP server the gateway starts as a command and speaks to over stdio. */
export const StdioUpstreamSchema = z
  .object({
    command: z.string().min(1).describe('The program that runs the MCP server (looked up on PATH).'),
    args: z.array(z.string()).optional().describe('Its arguments.'),
    env: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        'Variables set for the upstream, on top of what it inherits; a $' +
          "{NAME} in a value is taken from the gateway's environment (the way to hand it a variable it does not inherit, such as a credential's).",
      ),
    env_inherit: z
      .union([z.enum(['all', 'none']), z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/))])
      .optional()
      .describe(
        "What the upstream inherits from the gateway's environment. all: everything except Idem's own variables (IDEM_*, auth.bearer token_env, the credentials' env, any variable holding a credential's value, $" +
          `{NAME} used in store.url or upstream headers); none: only HOME, LOGNAME, PATH, SHELL, TERM, USER; a list of names: those (never Idem's own), and the same safe few. env applies on top. Default ${UPSTREAM_ENV_INHERIT}.`,
      ),
    cwd: z
      .string()
      .optional()
      .describe("Its working directory, relative to the config file's. Default: the gateway's."),
    share: ShareSchema,
    identity: IdentitySchema,
    identity_env: z
      .enum(IDENTITY_ENV)
      .optional()
      .describe(
        "Which of its environment is part of what the server is (docs/gateway.md, \"What is the same server\"). declared (default in a config file): its env and the variables an env_inherit list names — what it merely inherits differs from host to host of a fleet, and must not make a retry through another gateway another action. inherited: everything it is given, less the variables of the launch (a terminal's, an editor's) — what idem gateway -- <command> uses, since a client's env block is that server's configuration.",
      ),
    spare: z
      .boolean()
      .optional()
      .describe(
        "Keep one process of this upstream started ahead for the next stateful HTTP session, which then need not wait for the upstream's start; another is started when it is taken (docs/gateway.md). Default false: each session's process starts with its initialize, as a server expects; never for share: true.",
      ),
  })
  .strict();

/** An upstream MCP server reached over HTTP: Streamable HTTP, or the 2024-11-05 HTTP+SSE transport. */
export const HttpUpstreamSchema = z
  .object({
    url: z
      .url()
      .describe(
        "The server's MCP endpoint: its Streamable HTTP endpoint, or an SSE server's event stream (/sse).",
      ),
    transport: z
      .enum(['auto', 'streamable_http', 'sse'])
      .optional()
      .describe(
        'How the URL is spoken to. auto (default): Streamable HTTP, and if the server refuses the first POST with a 4xx, the 2024-11-05 HTTP+SSE transport at the same URL (a GET for its event stream), as the SDK client does. streamable_http: never SSE. sse: only SSE (an SSE-only server, without the refused POST first).',
      ),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        'Headers sent with every request; a $' +
          '{NAME} in a value is taken from the environment, so secrets stay out of the file.',
      ),
    share: ShareSchema,
    identity: IdentitySchema,
  })
  .strict();
