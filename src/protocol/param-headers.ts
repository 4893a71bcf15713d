import { HEADER_MISMATCH } from './revisions.js';

/**
 * SEP-2243 (2026-07-28, Streamable HTTP): a tool may mark arguments with
 * `x-mcp-header: Name` in its input schema; a client then mirrors each such
 * argument into an `Mcp-Param-Name` header (so that infrastructure can route
 * on it without reading the body), and the server checks the header against
 * the body before the tool runs.
 *
 * The gateway is that server to its clients and that client to its
 * upstreams: it checks what arrives, and mirrors the arguments again towards
 * a 2026-07-28 HTTP upstream (whose own check would otherwise refuse the
 * call). The v2 SDK has these rules but does not export them; this file
 * follows its reading of the spec (`core-internal/src/shared/mcpParamHeaders.ts`).
 */

const PREFIX = 'Mcp-Param-';
const BASE64_PREFIX = '=?base64?';
const BASE64_SUFFIX = '?=';
const BASE64_CANONICAL = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const CANONICAL_DECIMAL = /^-?\d+(\.\d+)?$/;
/** RFC 9110 token: what a header name suffix may be. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PERMITTED_TYPES = new Set(['string', 'integer', 'boolean', 'number']);

/** One argument a tool mirrors into a header: where it is in the arguments, and the header's name. */
export interface ParamHeader {
  path: string[];
  header: string;
  type: string;
}

/**
 * The `x-mcp-header` declarations of a tool's input schema, reached through
 * `properties` only (the spec allows no other position). A declaration that
 * is not a valid token, or not on a primitive, is skipped: the gateway
 * neither asks for nor sends a header it could not name.
 */
export function paramHeadersOf(inputSchema: unknown): ParamHeader[] {
  const found: ParamHeader[] = [];
  const visit = (node: unknown, path: string[]) => {
    if (!node || typeof node !== 'object') return;
    const schema = node as Record<string, unknown>;
    const header = schema['x-mcp-header'];
    const type = typeof schema.type === 'string' ? schema.type : '';
    if (path.length > 0 && typeof header === 'string' && TOKEN.test(header) && PERMITTED_TYPES.has(type))
      found.push({ path, header, type });
    const properties = schema.properties;
    if (properties && typeof properties === 'object')
      for (const [key, child] of Object.entries(properties)) visit(child, [...path, key]);
  };
  visit(inputSchema, []);
  return found;
}

function valueAt(root: unknown, path: string[]): unknown {
  let node = root;
  for (const key of path) {
    if (!node || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/** An argument as its header states it; undefined for what has no header form. */
function asText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (!Number.isInteger(value) || Number.isSafeInteger(value))
  )
    return String(value);
  return undefined;
}

/**
 * A header value as the value it carries (an argument, or `Mcp-Name`'s name or
 * URI): Base64 inside the sentinel, else literal; undefined if malformed.
 */
export function decodeHeaderValue(value: string): string | undefined {
  if (!(value.startsWith(BASE64_PREFIX) && value.endsWith(BASE64_SUFFIX))) return value;
  const payload = value.slice(BASE64_PREFIX.length, value.length - BASE64_SUFFIX.length);
  if (!BASE64_CANONICAL.test(payload)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(payload, 'base64'));
  } catch {
    return undefined;
  }
}

/** The JSON-RPC error for a request whose `Mcp-Param-*` headers do not match its arguments. */
export interface ParamHeaderMismatch {
  code: typeof HEADER_MISMATCH;
  message: string;
  data: { mismatch: { header: string; body: string } };
}

/**
 * Checks a call's headers against its arguments: for every declared argument
 * the call carries, its header must be present and say the same (numbers
 * compared as numbers); a header for an absent argument is ignored.
 */
export function checkParamHeaders(
  declared: ParamHeader[],
  args: unknown,
  headerOf: (name: string) => string | undefined,
): ParamHeaderMismatch | undefined {
  for (const { path, header, type } of declared) {
    const name = `${PREFIX}${header}`;
    const body = valueAt(args, path);
    const text = asText(body);
    if (body === undefined || body === null || text === undefined) continue;
    const sent = headerOf(name.toLowerCase());
    const decoded = sent === undefined ? undefined : decodeHeaderValue(sent);
    const problem =
      sent === undefined
        ? `the arguments carry ${path.join('.')} but the ${name} header is absent`
        : decoded === undefined
          ? `the ${name} header carries an invalid Base64 value`
          : !equal(decoded, body, text, type)
            ? `the ${name} header says ${JSON.stringify(decoded)} but the arguments carry ${path.join('.')}=${JSON.stringify(body)}`
            : undefined;
    if (problem)
      return {
        code: HEADER_MISMATCH,
        message: `Bad Request: the request headers and body disagree: ${problem}`,
        data: { mismatch: { header: name, body: problem } },
      };
  }
  return undefined;
}

function equal(decoded: string, body: unknown, text: string, type: string): boolean {
  if (
    (type === 'integer' || type === 'number') &&
    typeof body === 'number' &&
    CANONICAL_DECIMAL.test(decoded)
  )
    return Number(decoded) === body;
  return decoded === text;
}

/**
 * A value as a header carries it (an argument, `Mcp-Name`): plain printable
 * ASCII as it is, anything else (and surrounding spaces, which a header would
 * lose, or what looks like the sentinel) inside the Base64 sentinel.
 */
export function encodeHeaderValue(text: string): string {
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(text) && !text.startsWith(BASE64_PREFIX);
  return plain ? text : `${BASE64_PREFIX}${Buffer.from(text, 'utf8').toString('base64')}${BASE64_SUFFIX}`;
}

/** The `Mcp-Param-*` headers a call's arguments give, as a client sends them. */
export function paramHeadersFor(declared: ParamHeader[], args: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { path, header } of declared) {
    const text = asText(valueAt(args, path));
    if (text === undefined) continue;
    headers[`${PREFIX}${header}`] = encodeHeaderValue(text);
  }
  return headers;
}
