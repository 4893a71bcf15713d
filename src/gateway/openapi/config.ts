import { z } from 'zod';
import { writtenDuration } from '../../contracts/duration.js';
import { CREDENTIAL_NAME } from '../../credentials/config.js';
import { HTTP_TOOL_TIMEOUT_MS } from '../../defaults.js';

/** One OpenAPI document whose operations become HTTP action tools (docs/openapi.md). */
export const HttpToolsFromEntrySchema = z
  .object({
    openapi: z
      .string()
      .min(1)
      .describe(
        'The OpenAPI 3.0/3.1 document: a file (JSON or YAML; relative to the config file) or an http(s):// URL, fetched at start only because it is written here.',
      ),
    include: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'The operations to import: operationIds (as written, or as the tool name), "tag:<name>", or path globs starting with / (* one segment, ** any). Default: every operation.',
      ),
    credential: z
      .string()
      .regex(CREDENTIAL_NAME)
      .optional()
      .describe(
        "A credential under credentials:, sent as each operation's security scheme says (bearer, basic, an API key in a header or the query). Default: none.",
      ),
    headers: z
      .record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/), z.string())
      .optional()
      .describe(
        'Headers every imported tool sends as written (an API version, a tenant); a $' +
          '{NAME} in a value is taken from the environment at start and scrubbed as a credential is. A header parameter of that name is then not an argument. Default: User-Agent: idem/<version>, Accept: application/json.',
      ),
    username: z.string().optional().describe('The user name of an HTTP basic security scheme.'),
    server: z
      .string()
      .regex(/^https?:\/\//, 'an http:// or https:// base URL')
      .optional()
      .describe(
        "The base URL the operations' paths are appended to, instead of the document's servers (required when those are relative).",
      ),
    timeout: z
      .union([z.string(), z.number().nonnegative()])
      .optional()
      .describe(
        `Every imported tool's timeout: no full answer by then → unknown. Default: the contract's timeout, else ${writtenDuration(HTTP_TOOL_TIMEOUT_MS)}.`,
      ),
    allow: z
      .object({
        addresses: z
          .array(z.union([z.ipv4(), z.ipv6()]))
          .min(1)
          .describe(
            'Private, loopback or link-local addresses the tools may connect to (each named exactly).',
          ),
      })
      .strict()
      .optional(),
    limits: z
      .object({
        bytes: z
          .number()
          .int()
          .positive()
          .optional()
          .describe(
            'Bytes of the document and the files its $refs name, together. Default: 33554432 (32 MiB).',
          ),
        depth: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('Levels of nesting, as written and once $refs are replaced. Default: 128.'),
        expanded: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('Objects of the document once every $ref and YAML alias is replaced. Default: 2000000.'),
        input_schemas: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('Objects of the input schemas of every tool made from it, together. Default: 40000.'),
      })
      .strict()
      .optional()
      .describe(
        'What the document may cost the start (docs/openapi.md, "Limits"): past one, the gateway does not start, and says which.',
      ),
  })
  .strict();

export const HttpToolsFromSchema = z
  .array(HttpToolsFromEntrySchema)
  .min(1)
  .describe('HTTP action tools imported from OpenAPI documents (docs/openapi.md).');

export type HttpToolsFromEntry = z.output<typeof HttpToolsFromEntrySchema>;
