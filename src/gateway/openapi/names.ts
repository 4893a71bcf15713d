import { createHash } from 'node:crypto';

/** The MCP tool-name rule the gateway's tools follow. */
const TOOL_NAME_MAX = 64;

/**
 * A tool name from an operationId (`issues/create` → `issues_create`), or from the method and path
 * when the operation has none. Within the 64 characters a client accepts: a longer one keeps its
 * start and ends with a digest of the whole, so two long ids stay two names.
 */
export function toolNameOf(operationId: string | undefined, method: string, path: string): string {
  const raw = operationId ?? `${method.toLowerCase()}_${path}`;
  const name = raw
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .replace(/_{2,}/g, '_');
  const base = name || method.toLowerCase();
  if (base.length <= TOOL_NAME_MAX) return base;
  const digest = createHash('sha256').update(raw).digest('hex').slice(0, 8);
  return `${base.slice(0, TOOL_NAME_MAX - 9)}_${digest}`;
}

/**
 * An argument name a template can place (`{name}`: a letter or _, then letters, digits, _): a
 * parameter named `X-Request-Id` or `filter[name]` becomes `X_Request_Id`, `filter_name_`.
 */
export function argumentNameOf(parameter: string): string {
  const name = parameter.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[A-Za-z_]/.test(name) ? name : `_${name}`;
}
