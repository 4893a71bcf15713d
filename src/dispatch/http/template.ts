import { DispatchRefusedError, InvalidInputError } from '../../errors.js';
import { IDEM_USER_AGENT } from '../../support/package-version.js';
import type { HttpToolSpec } from './spec.js';

/** `{name}` or `{a.b.c}`: an argument, by path. */
const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}/g;
/** A segment the URL parser resolves away (WHATWG URL: ".", "..", and their %2e spellings). */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;
const WHOLE = /^\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}$/;

/** Whether a template text refers to any argument. */
export function hasPlaceholder(text: string): boolean {
  return new RegExp(PLACEHOLDER.source).test(text);
}

function argumentAt(args: Record<string, unknown>, path: string): unknown {
  let node: unknown = args;
  for (const key of path.split('.')) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/**
 * An argument as a template places it. One that is missing, or is not a
 * string, number or boolean, is the caller's to fix — the same rule as an SSH
 * command's (InvalidInputError, checked before anything is claimed: see
 * checkTemplateArguments).
 */
function scalarText(args: Record<string, unknown>, path: string, where: string): string {
  const value = argumentAt(args, path);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw value === undefined || value === null
    ? new InvalidInputError('missing_argument', path, `the ${where} needs argument "${path}"`)
    : new InvalidInputError(
        'unsafe_argument',
        path,
        `argument "${path}" must be a string, number or boolean to be placed in the ${where}`,
      );
}

/**
 * An argument placed in a header: a line break (header injection), another
 * control character, or a character beyond Latin-1 — none of which HTTP/1.1
 * carries in a field value (RFC 9110 §5.5) — cannot be sent, whatever the
 * target; the caller's to fix, like a NUL byte in an SSH argument.
 */
function headerArgument(args: Record<string, unknown>, path: string, header: string): string {
  const value = scalarText(args, path, `header ${header}`);
  if (/[\r\n\0]/.test(value))
    throw new InvalidInputError('unsafe_argument', path, `header ${header} cannot carry a line break`);
  if (/[^\t\x20-\x7e\x80-\xff]/.test(value))
    throw new InvalidInputError(
      'unsafe_argument',
      path,
      `header ${header} cannot carry a control character or one beyond Latin-1`,
    );
  return value;
}

/**
 * Throws InvalidInputError for an argument the URL or a header template needs
 * and the call cannot give (missing, not a scalar, a character a header
 * cannot carry). Called before anything is claimed, so such a call is refused
 * with nothing recorded or sent. (Body placeholders need nothing: an absent
 * argument leaves its member out.)
 */
export function checkTemplateArguments(
  url: string,
  headers: Record<string, string> | undefined,
  args: Record<string, unknown>,
  given: { query?: Record<string, string>; optionalHeaders?: Record<string, string> } = {},
): void {
  for (const [, path] of url.matchAll(PLACEHOLDER)) scalarText(args, path as string, 'URL');
  for (const [name, template] of Object.entries(headers ?? {}))
    for (const [, path] of template.matchAll(PLACEHOLDER)) headerArgument(args, path as string, name);
  for (const [name, template] of Object.entries(given.optionalHeaders ?? {}))
    if (allGiven(template, args))
      for (const [, path] of template.matchAll(PLACEHOLDER)) headerArgument(args, path as string, name);
  for (const [name, template] of Object.entries(given.query ?? {})) queryValues(name, template, args);
}

/** Whether every argument a template names is given: an optional header or query parameter is sent only then. */
function allGiven(template: string, args: Record<string, unknown>): boolean {
  for (const [, path] of template.matchAll(PLACEHOLDER)) {
    const value = argumentAt(args, path as string);
    if (value === undefined || value === null) return false;
  }
  return true;
}

/**
 * The values of one query parameter: none when an argument it names is absent; one per item when
 * the template is exactly one placeholder and the argument an array of scalars (OpenAPI's default
 * for a query array, `form` with `explode`); else the template with each argument as text.
 */
function queryValues(name: string, template: string, args: Record<string, unknown>): string[] {
  if (!allGiven(template, args)) return [];
  const whole = WHOLE.exec(template);
  const value = whole ? argumentAt(args, whole[1] as string) : undefined;
  if (whole && Array.isArray(value))
    return value.map((item, index) => {
      if (typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean')
        return String(item);
      throw new InvalidInputError(
        'unsafe_argument',
        `${whole[1]}.${index}`,
        `query parameter ${name} takes strings, numbers or booleans, one per item`,
      );
    });
  return [
    template.replace(PLACEHOLDER, (_, path: string) => scalarText(args, path, `query parameter ${name}`)),
  ];
}

/**
 * The URL with the query parameters added (after the template's own). URLSearchParams
 * percent-encodes each name and value, so a value cannot start another parameter.
 */
export function withQuery(
  url: URL,
  templates: Record<string, string> | undefined,
  args: Record<string, unknown>,
): URL {
  for (const [name, template] of Object.entries(templates ?? {}))
    for (const value of queryValues(name, template, args)) url.searchParams.append(name, value);
  return url;
}

/** The optional headers whose arguments are all given, built as buildHeaders builds headers. */
export function buildOptionalHeaders(
  templates: Record<string, string> | undefined,
  args: Record<string, unknown>,
): Record<string, string> {
  const given = Object.entries(templates ?? {}).filter(([, template]) => allGiven(template, args));
  return buildHeaders(Object.fromEntries(given), args);
}

/**
 * The URL a call leads to. Every substituted value is percent-encoded
 * (encodeURIComponent) wherever it lands, so an argument cannot add a path
 * segment, a query parameter, a user-info part or another host: "a/../b",
 * "x?admin=1", "evil.com#" all stay inside their placeholder, or make the URL
 * invalid (refused). What encoding cannot keep is a dot segment: a value "..",
 * or two placeholders giving "." and ".", would make a segment the URL parser
 * removes along with the one before it ("%2e%2e" is a dot segment too), so a
 * path holding one is refused.
 */
export function buildUrl(template: string, args: Record<string, unknown>): URL {
  const text = template.replace(PLACEHOLDER, (_, path: string) =>
    encodeURIComponent(scalarText(args, path, 'URL')),
  );
  // Values are encoded, so the authority and the path end where the template's own "/", "?" and "#" say.
  const path = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*([^?#]*)/.exec(text)?.[1] ?? '';
  if (path.split('/').some((segment) => DOT_SEGMENT.test(segment)))
    throw new DispatchRefusedError(
      'the URL built from the arguments has a "." or ".." path segment, which would move its path; refused',
    );
  try {
    return new URL(text);
  } catch {
    throw new DispatchRefusedError('the URL built from the arguments is not a valid URL');
  }
}

/**
 * Header values, each argument checked as headerArgument says. What the
 * template's own text holds that a header cannot carry is the operator's:
 * every call is refused (IDEM_DENIED), naming the header.
 */
export function buildHeaders(
  templates: Record<string, string> | undefined,
  args: Record<string, unknown>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, template] of Object.entries(templates ?? {})) {
    const value = template.replace(PLACEHOLDER, (_, path: string) => headerArgument(args, path, name));
    if (/[^\t\x20-\x7e\x80-\xff]/.test(value))
      throw new DispatchRefusedError(
        `header ${name} would contain a line break, a control character or one beyond Latin-1, which HTTP headers cannot carry; refused`,
      );
    headers[name] = value;
  }
  return headers;
}

/**
 * The JSON body: a string that is exactly one placeholder becomes the argument
 * itself, typed (an object member whose argument is absent is left out); a
 * placeholder inside longer text is replaced as text.
 */
export function buildBody(template: unknown, args: Record<string, unknown>): unknown {
  if (typeof template === 'string') {
    const whole = WHOLE.exec(template);
    if (whole) return argumentAt(args, whole[1] as string);
    return template.replace(PLACEHOLDER, (_, path: string) => {
      const value = argumentAt(args, path);
      return value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
    });
  }
  if (Array.isArray(template)) return template.map((item) => buildBody(item, args) ?? null);
  if (template !== null && typeof template === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(template)) {
      const value = buildBody(item, args);
      if (value !== undefined) out[key] = value;
    }
    return out;
  }
  return template;
}

/**
 * The headers of a call before Idem's own (the credential, the idempotency key): `User-Agent:
 * idem/<version>`, then the optional and required header templates, then the fixed headers,
 * each replacing any other-cased copy of its name — so the operator's fixed value wins.
 */
export function requestHeaders(
  spec: Pick<HttpToolSpec, 'headers' | 'optional_headers' | 'fixed_headers'>,
  args: Record<string, unknown>,
): Record<string, string> {
  const headers: Record<string, string> = { 'user-agent': IDEM_USER_AGENT };
  const given = { ...buildOptionalHeaders(spec.optional_headers, args), ...buildHeaders(spec.headers, args) };
  for (const [name, value] of Object.entries({ ...given, ...spec.fixed_headers }))
    setHeader(headers, name, value);
  return headers;
}

/** Sets a header, dropping any other-cased copy of its name. */
export function setHeader(headers: Record<string, string>, name: string, value: string): void {
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name.toLowerCase()) delete headers[key];
  headers[name] = value;
}
