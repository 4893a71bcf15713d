import type { HttpToolSpecInput } from '../../dispatch/http/index.js';
import type { HttpToolsFromEntry } from './config.js';
import {
  type BusinessKeySuggestion,
  type SuggestedContract,
  suggestedBusinessKey,
  suggestedContract,
} from './contracts.js';
import { credentialFor } from './credentials.js';
import type {
  HttpMethodName,
  JsonSchema,
  OpenApiDocument,
  Operation,
  Parameter,
  PathItem,
} from './document.js';
import { argumentNameOf, toolNameOf } from './names.js';
import { jsonSchemaOf, type SchemaBudget } from './schema.js';
import { baseUrlOf, serverText } from './servers.js';

/** An operation that became an HTTP tool spec (its contract is set by the import: import.ts). */
export interface MappedOperation {
  kind: 'mapped';
  name: string;
  /** `POST /repos/{owner}/{repo}/issues`: how lint and the log name it. */
  label: string;
  operationId?: string;
  tags: string[];
  spec: Omit<HttpToolSpecInput, 'contract'>;
  suggestion: SuggestedContract;
  businessKey: BusinessKeySuggestion;
  /** What the operator should know: a parameter left out, how the credential is sent. */
  notes: string[];
}

/** An operation the importer cannot make a tool of, and why (said at start and by lint). */
export interface SkippedOperation {
  kind: 'skipped';
  name: string;
  label: string;
  operationId?: string;
  tags: string[];
  reason: string;
}

export interface DocumentContext {
  document: OpenApiDocument;
  entry: HttpToolsFromEntry;
  /** What the input schemas of the document's tools may take together (schema.ts); default: no bound. */
  schemas?: SchemaBudget;
}

const SUPPORTED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);
/** OpenAPI: header parameters of these names "SHALL be ignored" (the request's own machinery sets them). */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);
const IDEMPOTENCY_HEADER = 'idempotency-key';
/**
 * What every imported tool sends besides its parameters (the channel adds `User-Agent:
 * idem/<version>`): the documents describe JSON APIs, and some (GitHub's) answer otherwise or
 * refuse without. The entry's `headers:` go on top.
 */
export const IMPORTED_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  Accept: 'application/json',
});
/** A media type whose body is JSON: application/json, application/vnd.x+json, with parameters. */
const JSON_MEDIA = /^application\/(?:[\w.+-]*\+)?json\s*(?:;|$)/i;
/** A description kept within what a model is shown without drowning the rest. */
const DESCRIPTION_MAX = 2000;

/**
 * One operation as an HTTP tool spec — exactly what a hand-written `http_tools:` entry would be:
 * the path and query parameters and the header parameters as arguments (renamed where a template
 * could not place their name), the JSON request body as one argument `body` (kept whole: its
 * schema is the document's, polymorphic or not, and no field can collide with a parameter), the
 * URL template on the server's base, the credential as the security scheme says.
 */
export function mapOperation(
  methodName: HttpMethodName,
  path: string,
  item: PathItem,
  operation: Operation,
  context: DocumentContext,
): MappedOperation | SkippedOperation {
  const { document, entry } = context;
  const method = methodName.toUpperCase();
  const label = `${method} ${path}`;
  const name = toolNameOf(operation.operationId, method, path);
  const identity = {
    name,
    label,
    ...(operation.operationId ? { operationId: operation.operationId } : {}),
    tags: operation.tags ?? [],
  };
  const skip = (reason: string): SkippedOperation => ({ kind: 'skipped', ...identity, reason });
  if (!SUPPORTED_METHODS.has(method)) return skip(`${method} is not a method HTTP action tools send`);
  const httpMethod = method as HttpToolSpecInput['method'];
  const openapi30 = document.openapi.startsWith('3.0.');

  const servers = operation.servers ?? item.servers ?? document.servers;
  const base = baseUrlOf(servers, entry.server);
  if (!base)
    return skip(
      `its server URL ${serverText(servers)} is not absolute: give server: <base URL> in http_tools_from`,
    );

  const credential = credentialFor(operation, document, entry);
  if ('unmappable' in credential) return skip(credential.unmappable);
  const notes: string[] = credential.note ? [credential.note] : [];

  // Path-level parameters apply unless the operation redeclares one (same name and location).
  const byKey = new Map<string, Parameter>();
  for (const parameter of [...(item.parameters ?? []), ...(operation.parameters ?? [])])
    byKey.set(`${parameter.in}\u0000${parameter.name}`, parameter);

  const fixedHeaders = { ...IMPORTED_HEADERS, ...entry.headers };
  const fixed = new Set(Object.keys(entry.headers ?? {}).map((name) => name.toLowerCase()));
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const pathArguments = new Map<string, string>();
  const query: Record<string, string> = {};
  const headers: Record<string, string> = {};
  const optionalHeaders: Record<string, string> = {};
  const argumentOf = new Map<string, string>();
  let idempotencyHeader: string | undefined;

  for (const parameter of byKey.values()) {
    const where = `${parameter.in} parameter ${parameter.name}`;
    if (parameter.in === 'header' && IGNORED_HEADERS.has(parameter.name.toLowerCase())) continue;
    // The operator's fixed value is sent: the model is not asked for it.
    if (parameter.in === 'header' && fixed.has(parameter.name.toLowerCase())) continue;
    if (
      credential.fills &&
      credential.fills.in === parameter.in &&
      credential.fills.name.toLowerCase() === parameter.name.toLowerCase()
    )
      continue;
    if (parameter.in === 'header' && parameter.name.toLowerCase() === IDEMPOTENCY_HEADER) {
      // Idem fills it with the execution id: not an argument.
      idempotencyHeader = parameter.name;
      continue;
    }
    const unsupported = unsupportedParameter(parameter);
    if (unsupported) {
      if (parameter.required || parameter.in === 'path') return skip(`${where}: ${unsupported}`);
      notes.push(`${where} left out: ${unsupported}`);
      continue;
    }
    const argument = argumentNameOf(parameter.name);
    const other = argumentOf.get(argument);
    if (other || argument === 'body')
      return skip(`${where} and ${other ?? 'the request body'} would be the same argument "${argument}"`);
    argumentOf.set(argument, where);
    const schema = jsonSchemaOf(parameter.schema ?? {}, openapi30, context.schemas);
    const description = [parameter.description, argument !== parameter.name ? `(${where})` : undefined]
      .filter(Boolean)
      .join(' ');
    properties[argument] = description ? { ...schema, description } : schema;
    if (parameter.in === 'path' || parameter.required) required.push(argument);
    if (parameter.in === 'path') pathArguments.set(parameter.name, argument);
    else if (parameter.in === 'query') query[parameter.name] = `{${argument}}`;
    else if (parameter.required) headers[parameter.name] = `{${argument}}`;
    else optionalHeaders[parameter.name] = `{${argument}}`;
  }

  let missing: string | undefined;
  const pathTemplate = path.replace(/\{([^}]+)\}/g, (_, parameter: string) => {
    const argument = pathArguments.get(parameter);
    if (!argument) missing ??= parameter;
    return `{${argument}}`;
  });
  if (missing) return skip(`its path names {${missing}}, which no path parameter declares`);

  let body: JsonSchema | undefined;
  let bodyRequired = false;
  let contentType: string | undefined;
  const requestBody = operation.requestBody;
  if (requestBody?.content && Object.keys(requestBody.content).length > 0) {
    const types = Object.keys(requestBody.content);
    contentType = types.find((type) => JSON_MEDIA.test(type));
    if (!contentType) {
      const multipart = types.find((type) => /^multipart\//i.test(type));
      return skip(
        multipart
          ? `its request body is a ${multipart} upload; only JSON bodies are mapped`
          : `its request body is ${types.join(', ')}; only JSON bodies are mapped`,
      );
    }
    body = jsonSchemaOf(requestBody.content[contentType]?.schema ?? {}, openapi30, context.schemas);
    if (requestBody.description) body = { ...body, description: requestBody.description };
    bodyRequired = requestBody.required === true;
    properties.body = body;
    if (bodyRequired) required.push('body');
  }
  if (operation.callbacks)
    notes.push('its callbacks (requests the API makes to you) are not tools: left out');

  // A JSON type of its own (application/vnd.api+json) is said; plain JSON is the channel's default.
  if (contentType && !/^application\/json\s*(;|$)/i.test(contentType)) headers['Content-Type'] = contentType;
  const suggestion = suggestedContract(httpMethod, idempotencyHeader);
  const bodyFields = Object.keys((body?.properties as Record<string, unknown> | undefined) ?? {});
  const inputSchema = {
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
  const spec: MappedOperation['spec'] = {
    description: descriptionOf(operation, label),
    input_schema: inputSchema as NonNullable<HttpToolSpecInput['input_schema']>,
    method: httpMethod,
    url: `${base}${pathTemplate}`,
    ...(Object.keys(query).length > 0 ? { query } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(Object.keys(optionalHeaders).length > 0 ? { optional_headers: optionalHeaders } : {}),
    fixed_headers: fixedHeaders,
    ...(body ? { body: '{body}' } : {}),
    ...(credential.use ? { credential: credential.use } : {}),
    ...(idempotencyHeader ? { idempotency_header: idempotencyHeader } : {}),
    ...(entry.allow ? { allow: { addresses: entry.allow.addresses } } : {}),
    ...(entry.timeout !== undefined ? { timeout: entry.timeout } : {}),
  };
  return {
    kind: 'mapped',
    ...identity,
    spec,
    suggestion,
    businessKey: suggestedBusinessKey(httpMethod, [...pathArguments.values()], bodyFields),
    notes,
  };
}

/** Why a parameter cannot be an argument a template places, if it cannot. */
function unsupportedParameter(parameter: Parameter): string | undefined {
  if (parameter.in === 'cookie') return 'cookie parameters are not sent';
  if (!parameter.schema && parameter.content)
    return 'a parameter serialized as a media type (content:) is not sent';
  const type = parameter.schema?.type;
  if (type === 'object')
    return `an object in the ${parameter.in} (style ${parameter.style ?? 'default'}) is not sent`;
  if (type === 'array') {
    if (parameter.in !== 'query') return `an array in the ${parameter.in} is not sent`;
    const explode = parameter.explode ?? (parameter.style ?? 'form') === 'form';
    if ((parameter.style ?? 'form') !== 'form' || !explode)
      return 'a query array is sent only as repeated parameters (style form, explode)';
    const items = (parameter.schema?.items as JsonSchema | undefined)?.type;
    if (items === 'object' || items === 'array') return 'a query array of objects or arrays is not sent';
  }
  if (parameter.in === 'path' && parameter.style && parameter.style !== 'simple')
    return `path style ${parameter.style} is not sent`;
  return undefined;
}

function descriptionOf(operation: Operation, label: string): string {
  const parts = [operation.summary, operation.description]
    .map((part) => part?.trim())
    .filter((part): part is string => Boolean(part));
  // A description that repeats the summary is said once.
  const unique = parts.filter((part, index) => index === 0 || part !== parts[0]);
  const text = unique.join('\n\n');
  const kept = text.length > DESCRIPTION_MAX ? `${text.slice(0, DESCRIPTION_MAX - 1)}…` : text;
  return [kept, `(${label}${operation.deprecated ? ', deprecated' : ''})`].filter(Boolean).join('\n\n');
}
