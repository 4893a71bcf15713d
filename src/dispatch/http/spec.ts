import { z } from 'zod';
import { ToolContractSchema } from '../../contracts/contract.js';
import { DurationSchema, writtenDuration } from '../../contracts/duration.js';
import { CREDENTIAL_NAME } from '../../credentials/config.js';
import { HTTP_TOOL_TIMEOUT_MS } from '../../defaults.js';

/** Bytes of an answer body kept (`max_response_bytes`). */
const MAX_RESPONSE_BYTES = 1_048_576;

/** A status, a class (`2xx`) or a range (`400-499`). */
const StatusPattern = z.union([
  z.number().int().min(100).max(599),
  z.string().regex(/^([1-5]xx|[1-5]\d\d(-[1-5]\d\d)?)$/),
]);

const CredentialUse = z.union([
  z
    .object({ name: z.string().regex(CREDENTIAL_NAME), scheme: z.literal('bearer') })
    .strict()
    .describe('Authorization: Bearer <value>'),
  z
    .object({ name: z.string().regex(CREDENTIAL_NAME), scheme: z.literal('basic'), username: z.string() })
    .strict()
    .describe('Authorization: Basic base64(username:<value>)'),
  z
    .object({
      name: z.string().regex(CREDENTIAL_NAME),
      scheme: z.literal('header'),
      header: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/),
      prefix: z.string().optional(),
    })
    .strict()
    .describe('<header>: <prefix><value>'),
  z
    .object({
      name: z.string().regex(CREDENTIAL_NAME),
      scheme: z.literal('query'),
      param: z.string().min(1),
    })
    .strict()
    .describe('?<param>=<value> added to the URL (an API key in the query, as some APIs want it)'),
]);

/** One HTTP action tool, as the gateway config declares it under `http_tools:` (docs/channels-http.md). */
export const HttpToolSpecSchema = z
  .object({
    description: z.string().min(1),
    input_schema: z
      .record(z.string(), z.json())
      .default({ type: 'object' })
      .describe('JSON Schema of the arguments (type: object); validated before anything is claimed.'),
    method: z.enum(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']),
    url: z
      .string()
      .regex(/^https?:\/\//, 'an http:// or https:// URL template')
      .describe(
        'URL template: {name} (or {a.b}) is replaced by that argument, percent-encoded, in host, path or query alike.',
      ),
    headers: z
      .record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/), z.string())
      .optional()
      .describe('Header templates ({name} → the argument as text).'),
    optional_headers: z
      .record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/), z.string())
      .optional()
      .describe(
        'Header templates sent only when every argument they name is given (an optional header parameter); otherwise as headers.',
      ),
    fixed_headers: z
      .record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/), z.string())
      .optional()
      .describe(
        'Headers sent as written, whatever the arguments (no {argument} placeholders); they win over a header template of the same name. In the gateway config a $' +
          '{NAME} in a value is taken from the environment at start, and that value is scrubbed as a credential is. User-Agent defaults to idem/<version>.',
      ),
    query: z
      .record(z.string().min(1), z.string())
      .optional()
      .describe(
        'Query parameters added to the URL, each a template: left out when an argument it names is absent; a value that is exactly "{name}" with an array argument repeats the parameter (a=1&a=2). Percent-encoded.',
      ),
    body: z
      .json()
      .optional()
      .describe(
        'JSON body template: a string that is exactly "{name}" becomes that argument with its JSON type (the member is left out when the argument is absent); {name} inside a longer string is replaced as text. Omitted: no body.',
      ),
    credential: CredentialUse.optional(),
    idempotency_header: z
      .string()
      .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/)
      .default('Idempotency-Key')
      .describe('The header that carries the execution id.'),
    timeout: DurationSchema.optional().describe(
      `No full answer by then: the outcome is unknown. Default: the contract timeout, else ${writtenDuration(HTTP_TOOL_TIMEOUT_MS)}.`,
    ),
    target: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The target's name as recorded on executions. Default: the URL template's scheme://host:port.",
      ),
    allow: z
      .object({
        schemes: z
          .array(z.enum(['http', 'https']))
          .min(1)
          .optional(),
        hosts: z.array(z.string().min(1)).min(1).optional(),
        ports: z.array(z.number().int().min(1).max(65535)).min(1).optional(),
        addresses: z
          .array(z.union([z.ipv4(), z.ipv6()]))
          .optional()
          .describe(
            'Private, loopback, link-local or metadata addresses this tool may connect to (each named exactly). Others in those ranges are refused.',
          ),
      })
      .strict()
      .optional()
      .describe(
        "Where the built URL may lead. Default: the template's own scheme, host and port where they hold no {placeholder}; a placeholder in one of them requires its list here.",
      ),
    redirects: z
      .number()
      .int()
      .min(0)
      .max(10)
      .default(0)
      .describe('How many redirects to follow (each re-checked like the first URL); 0: none.'),
    outcome: z
      .object({
        completed: z.array(StatusPattern).optional(),
        failed: z.array(StatusPattern).optional(),
        unknown: z.array(StatusPattern).optional(),
      })
      .strict()
      .optional()
      .describe(
        'Which statuses mean what. Default: 2xx completed, 4xx failed, everything else (5xx, an unfollowed 3xx) unknown. The first list that matches wins, in the order completed, failed, unknown.',
      ),
    max_response_bytes: z
      .number()
      .int()
      .positive()
      .default(MAX_RESPONSE_BYTES)
      .describe(
        `Bytes of the answer body kept (and returned, and stored); the rest is not read. A longer body is cut, marked "[truncated at N bytes]", and is no longer parsed as JSON. Default ${MAX_RESPONSE_BYTES / 1_048_576} MiB.`,
      ),
    contract: ToolContractSchema.omit({ status_probe: true }).strict().optional(),
  })
  .strict();

export type HttpToolSpec = z.output<typeof HttpToolSpecSchema>;
export type HttpToolSpecInput = z.input<typeof HttpToolSpecSchema>;

export const HttpToolsConfigSchema = z
  .record(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/), HttpToolSpecSchema)
  .describe('HTTP action tools by the name clients see (docs/channels-http.md).');
