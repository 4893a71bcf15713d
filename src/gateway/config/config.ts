import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { ToolContractSchema } from '../../contracts/contract.js';
import { DurationSchema, writtenDuration as written } from '../../contracts/duration.js';
import { CredentialsConfigSchema } from '../../credentials/config.js';
import {
  CONTRACT_DEFAULTS,
  DEFAULT_MAINTENANCE_INTERVAL,
  DEFAULT_RETENTION,
  DEFAULT_SHUTDOWN_GRACE,
  DEFAULT_STATUS_TOOL,
  FINGERPRINT_KEY_FILE,
  HTTP_FRONT_DEFAULTS as FRONT,
  JOURNAL_SIGNING_KEY_FILE,
  RECEIPT_DEFAULTS,
  SQLITE_STORE_FILE,
} from '../../defaults.js';
import { HttpToolsConfigSchema } from '../../dispatch/http/spec.js';
import { SshHostsConfigSchema, SshToolsConfigSchema } from '../../dispatch/ssh/spec.js';
import { ConfigError, messageOf } from '../../errors.js';
import { DEFAULT_SQLITE_SYNCHRONOUS } from '../../store/sqlite/index.js';
import { LOG_FORMATS, LOG_LEVELS } from '../../support/log.js';
import { HttpToolsFromSchema } from '../openapi/config.js';
import { BearerTokenSchema, OAuthConfigSchema } from './auth.js';
import { describeConfigIssues } from './errors.js';
import { ConsoleConfigSchema, MetricsConfigSchema } from './operator.js';
import { HttpUpstreamSchema, StdioUpstreamSchema } from './upstreams.js';

/** A status probe the gateway can run on its own: call an upstream tool with the execution id. */
const StatusProbeConfig = z
  .object({
    tool: z.string().min(1).describe('The upstream tool to call (its gateway-visible name).'),
    arguments: z
      .record(z.string(), z.json())
      .optional()
      .describe('Its arguments; any string "{execution_id}" is replaced by the execution id.'),
  })
  .strict()
  .describe(
    'A non-error result of the probe tool means the action completed (that result is returned); an error result means unknown.',
  );

const GatewayToolContract = ToolContractSchema.omit({ status_probe: true })
  .extend({ status_probe: StatusProbeConfig.optional() })
  .strict();

/**
 * The contract of tools that have neither annotations nor a contract of their
 * own. No status probe or business key: those name one tool's specifics.
 */
const GatewayDefaults = ToolContractSchema.pick({
  attach_window: true,
  after_completion: true,
  after_failure: true,
  timeout: true,
  lease: true,
  approval: true,
  approval_timeout: true,
  allow_actors: true,
  elicitation: true,
})
  .extend({
    replay: ToolContractSchema.shape.replay.optional(),
    scope: z.union([z.enum(['session', 'actor']), z.object({ window: DurationSchema }).strict()]).optional(),
  })
  .strict();

/**
 * A browser's Origin value: scheme://host[:port], as a browser sends it. "*" is refused: any
 * origin would let every web page the user visits call the gateway (with the user's network).
 */
const OriginSchema = z.string().refine(
  (origin) => {
    try {
      return new URL(origin).origin === origin;
    } catch {
      return false;
    }
  },
  {
    message:
      'expected an origin as a browser sends it, scheme://host[:port] with no path (e.g. https://app.example.com); "*" is not accepted: list the origins of the pages that may call the gateway',
  },
);

export const GatewayConfigSchema = z
  .object({
    data_dir: z
      .string()
      .optional()
      .describe(
        'Directory of keys (and the SQLite store by default). Default: IDEM_DATA_DIR or a per-user directory.',
      ),
    fingerprint_key_file: z
      .string()
      .optional()
      .describe(
        `The installation's fingerprint key (32 bytes, 0600), created if missing. Every gateway on one store must use the same key. Default: <data_dir>/${FINGERPRINT_KEY_FILE}, or IDEM_FINGERPRINT_KEY_FILE.`,
      ),
    journal_signing_key_file: z
      .string()
      .optional()
      .describe(
        `Ed25519 key that signs the journals' heads (PKCS#8 PEM, 0600; public key beside it as .pub), created if missing. Keep it outside the data directory, readable by another user, so that whoever can rewrite the store cannot re-sign it. Default: <data_dir>/${JOURNAL_SIGNING_KEY_FILE}, or IDEM_JOURNAL_SIGNING_KEY_FILE.`,
      ),
    store: z
      .union([
        z
          .object({
            kind: z.literal('sqlite'),
            path: z
              .string()
              .optional()
              .describe(`The database file. Default: <data_dir>/${SQLITE_STORE_FILE}.`),
            synchronous: z
              .enum(['full', 'normal'])
              .optional()
              .describe(
                `When a commit counts as done. full: a claim is on disk before the call is dispatched (survives a power cut); an outcome reaches the disk within 200 ms. normal: faster, survives a process crash, but a power cut may lose the last commits, and an action whose claim was lost may run again. Default ${DEFAULT_SQLITE_SYNCHRONOUS}.`,
              ),
          })
          .strict(),
        z
          .object({
            kind: z.literal('postgres'),
            url: z
              .string()
              .min(1)
              .describe(
                'postgres://…; a $' +
                  '{NAME} in it is taken from the environment (keep passwords out of the file)',
              ),
            schema: z.string().optional().describe('The PostgreSQL schema of the tables.'),
            pool: z
              .object({
                max: z.number().int().positive().optional(),
                connection_timeout: DurationSchema.optional(),
                idle_timeout: DurationSchema.optional(),
              })
              .strict()
              .optional(),
            statement_timeout: DurationSchema.optional(),
          })
          .strict(),
        z.object({ kind: z.literal('memory') }).strict(),
      ])
      .optional()
      .describe(
        `Default: IDEM_STORE_URL (a postgres:// URL), else SQLite at <data_dir>/${SQLITE_STORE_FILE}.`,
      ),
    listen: z
      .object({
        stdio: z
          .boolean()
          .optional()
          .describe('Serve one client on stdin/stdout. Default: true without listen.http, false with it.'),
        http: z
          .object({
            host: z
              .string()
              .default('127.0.0.1')
              .describe('The address the Streamable HTTP front listens on.'),
            port: z.number().int().min(0).max(65535).default(8787).describe('Its port (0: any free one).'),
            path: z.string().startsWith('/').default('/mcp').describe('The MCP endpoint (--path).'),
            stateless: z
              .boolean()
              .default(false)
              .describe('No sessions: every POST stands alone (--stateless).'),
            sse: z
              .boolean()
              .default(false)
              .describe(
                "Also serve clients of the 2024-11-05 HTTP+SSE transport, beside the Streamable HTTP path: GET /sse opens a session's event stream, POST /messages?sessionId=… carries its messages (--sse; docs/gateway.md). Same Host/Origin checks, auth, session owner and limits as Streamable HTTP; a session ends with its stream. Needs sessions (not with stateless). Default false.",
              ),
            session_idle_timeout: DurationSchema.optional().describe(
              `A session with nothing in progress and no request for this long is closed, with its upstream connections (0: never). Default ${written(FRONT.sessionIdleMs)}.`,
            ),
            session_unused_timeout: DurationSchema.optional().describe(
              `The same for a session that never got a request after its initialize (a client that connected and left). Default ${written(FRONT.sessionUnusedMs)}, at most session_idle_timeout.`,
            ),
            max_sessions: z
              .number()
              .int()
              .positive()
              .optional()
              .describe(
                `Open sessions at most, all actors together. At the cap, a new initialize closes the least recently used session with nothing in progress, or is refused (503, IDEM_SESSIONS_FULL) if every one is in use. Default ${FRONT.maxSessions}.`,
              ),
            max_sessions_per_actor: z
              .number()
              .int()
              .positive()
              .optional()
              .describe(
                `Open sessions of one actor at most: at the cap, a new initialize closes that actor's least recently used session with nothing in progress, or is refused (429, IDEM_SESSIONS_FULL). Default ${FRONT.maxSessionsPerActor}.`,
              ),
            allowed_hosts: z
              .array(z.string())
              .optional()
              .describe(
                'Host header values accepted (DNS-rebinding protection). Default: the listen address and localhost.',
              ),
            allowed_origins: z
              .array(OriginSchema)
              .optional()
              .describe(
                'Origin header values accepted when a browser sends one, each given CORS (--cors). Default: none.',
              ),
            tls: z
              .object({
                cert_file: z
                  .string()
                  .min(1)
                  .describe('The certificate chain, PEM (--tls-cert); relative to this file.'),
                key_file: z
                  .string()
                  .min(1)
                  .describe('Its private key, PEM (--tls-key); relative to this file.'),
              })
              .strict()
              .optional()
              .describe('Serve HTTPS instead of HTTP, with this certificate and key. Default: plain HTTP.'),
            allow_unauthenticated: z
              .boolean()
              .default(false)
              .describe(
                'Listen on a non-loopback address without auth (auth.bearer or auth.oauth). Every caller is then unauthenticated and its actor spoofable (docs/security.md); without this key the gateway refuses to start.',
              ),
            timeouts: z
              .object({
                headers: DurationSchema.optional().describe(
                  `From a request's first byte to the end of its headers (a connection that sends nothing is closed this long after connect). Default ${written(FRONT.headersTimeoutMs)}.`,
                ),
                request: DurationSchema.optional().describe(
                  `From a request's first byte to the end of its body. Default ${written(FRONT.requestTimeoutMs)}.`,
                ),
                idle: DurationSchema.optional().describe(
                  `A kept-alive connection with no request. Default ${written(FRONT.idleTimeoutMs)}.`,
                ),
              })
              .strict()
              .optional()
              .describe('Connection timeouts: a slow or idle client is cut off (streams are not bounded).'),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    auth: z
      .object({
        bearer: z
          .array(BearerTokenSchema)
          .min(1)
          .optional()
          .describe('Static bearer tokens mapped to actors.'),
        oauth: OAuthConfigSchema.optional().describe(
          'OAuth 2.1 access tokens (JWT) from your identity provider; the actor is a claim of the token (docs/auth.md).',
        ),
      })
      .strict()
      .refine((a) => a.bearer !== undefined || a.oauth !== undefined, 'set auth.bearer, auth.oauth or both')
      .optional()
      .describe(
        'Who may call the HTTP front, and as which actor (docs/auth.md). Without it, the HTTP front is open to loopback callers only.',
      ),
    // May be empty when the gateway serves only its own HTTP/SSH action tools (the refine below).
    upstreams: z
      .record(z.string().regex(/^[A-Za-z0-9_-]{1,32}$/), z.union([StdioUpstreamSchema, HttpUpstreamSchema]))
      .default({}),
    log_level: z
      .enum(LOG_LEVELS)
      .default('info')
      .describe('The least severe level written to stderr (error, warn, info, debug); --log-level wins.'),
    log_format: z
      .enum(LOG_FORMATS)
      .default('text')
      .describe('stderr lines as text, or as JSON lines {time, level, msg, …fields}; --log-format wins.'),
    credentials: CredentialsConfigSchema.optional(),
    http_tools: HttpToolsConfigSchema.optional(),
    http_tools_from: HttpToolsFromSchema.optional(),
    ssh_hosts: SshHostsConfigSchema.optional(),
    ssh_tools: SshToolsConfigSchema.optional(),
    tools: z
      .record(z.string(), GatewayToolContract)
      .optional()
      .describe('Contracts by gateway-visible tool name.'),
    defaults: GatewayDefaults.optional().describe(
      `The contract of tools that have neither annotations nor a contract under tools (most published servers annotate nothing), e.g. { replay: read_only }, or { replay: review, attach_window: 1m }. Without it they get replay: ${CONTRACT_DEFAULTS.replay}, scope: ${CONTRACT_DEFAULTS.scope}, attach_window: ${written(CONTRACT_DEFAULTS.attachWindowMs)}, and the gateway names them at start-up. Per-tool contracts win; annotated tools follow their annotations.`,
    ),
    status_tool: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/)
      .default(DEFAULT_STATUS_TOOL)
      .describe('The name of the tool through which a model asks about an execution by its ref.'),
    receipts: z
      .object({
        max: z
          .number()
          .int()
          .positive()
          .optional()
          .describe(`All actors together. Default ${RECEIPT_DEFAULTS.maxReceipts}.`),
        max_per_actor: z
          .number()
          .int()
          .positive()
          .optional()
          .describe(
            `One actor at most (so one actor cannot lock the others out). Default ${RECEIPT_DEFAULTS.maxReceiptsPerActor}.`,
          ),
        retention: DurationSchema.optional().describe(
          `How long an answered request id is remembered within its session (a resend gets the same answer). Default ${written(RECEIPT_DEFAULTS.retentionMs)}.`,
        ),
      })
      .strict()
      .optional(),
    retention: DurationSchema.default(DEFAULT_RETENTION).describe('How long finished executions are kept.'),
    sweep_interval: DurationSchema.default(DEFAULT_MAINTENANCE_INTERVAL).describe(
      "How often the gateway drops expired receipts and executions past retention, expires undecided approvals and signs the journals' heads.",
    ),
    shutdown_grace: DurationSchema.default(DEFAULT_SHUTDOWN_GRACE).describe(
      "On SIGTERM or SIGINT, how long the calls under way may take to finish and be recorded before the gateway exits (new calls are refused meanwhile; a second signal exits at once). What outlives it becomes unknown. Set it below your supervisor's kill timeout.",
    ),
    console: ConsoleConfigSchema.optional(),
    metrics: MetricsConfigSchema.optional(),
  })
  .strict()
  .refine(
    (c) =>
      Object.keys(c.upstreams).length > 0 ||
      Object.keys(c.http_tools ?? {}).length > 0 ||
      (c.http_tools_from?.length ?? 0) > 0 ||
      Object.keys(c.ssh_tools ?? {}).length > 0,
    {
      path: ['upstreams'],
      message:
        'nothing to serve: give at least one upstream, or an action tool under http_tools, http_tools_from or ssh_tools',
    },
  );

export type GatewayConfig = z.output<typeof GatewayConfigSchema>;
export type GatewayToolContractConfig = z.output<typeof GatewayToolContract>;
export type GatewayDefaultsConfig = z.output<typeof GatewayDefaults>;

/** Separator between upstream and tool name when there are several upstreams; valid in every major client's tool-name rules ([A-Za-z0-9_-]). */
export const NAME_SEPARATOR = '__';

/** Reads and validates a YAML (or JSON) config; relative paths are resolved against the file's directory. */
export function loadConfig(path: string): GatewayConfig {
  let raw: unknown;
  // The document keeps where each node is, so an invalid key is reported at its line and column.
  const lines = new LineCounter();
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(readFileSync(path, 'utf8'), { lineCounter: lines, prettyErrors: true });
    if (doc.errors.length > 0) throw doc.errors[0];
    raw = doc.toJS();
  } catch (error) {
    throw new ConfigError(`${path}: ${messageOf(error)}`);
  }
  const parsed = GatewayConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = describeConfigIssues(path, doc, lines, parsed.error.issues, configJsonSchema())
      .map((line) => `  ${line}`)
      .join('\n');
    throw new ConfigError(`${path} is not a valid Idem config:\n${issues}`);
  }
  const base = dirname(resolve(path));
  const config = parsed.data;
  const rel = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  if (config.data_dir) config.data_dir = rel(config.data_dir);
  if (config.fingerprint_key_file) config.fingerprint_key_file = rel(config.fingerprint_key_file);
  if (config.journal_signing_key_file) config.journal_signing_key_file = rel(config.journal_signing_key_file);
  if (config.store?.kind === 'sqlite' && config.store.path) config.store.path = rel(config.store.path);
  for (const upstream of Object.values(config.upstreams))
    if ('cwd' in upstream && upstream.cwd) upstream.cwd = rel(upstream.cwd);
  if (config.console?.token_file) config.console.token_file = rel(config.console.token_file);
  const tls = config.listen?.http?.tls;
  if (tls) Object.assign(tls, { cert_file: rel(tls.cert_file), key_file: rel(tls.key_file) });
  // A document named by a URL is fetched as written; a file is where the config says, relative to it.
  for (const entry of config.http_tools_from ?? [])
    if (!/^https?:\/\//i.test(entry.openapi)) entry.openapi = rel(entry.openapi);
  for (const credential of Object.values(config.credentials ?? {}))
    if ('file' in credential) credential.file = rel(credential.file);
  return config;
}

/** The JSON Schema of the config file (published as schema/idem-config.schema.json). */
export function configJsonSchema(): unknown {
  return z.toJSONSchema(GatewayConfigSchema, { io: 'input', unrepresentable: 'any' });
}
