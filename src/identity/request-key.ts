import { boundedText } from './client-text.js';

/**
 * Keys for request receipts (docs/lifecycle.md, step 2), which the journal
 * records as each event's request.
 *
 * The parts are encoded as a JSON array of strings. JSON string escaping is
 * injective and the array brackets and commas cannot occur unescaped inside a
 * string, so no choice of actor, session or id can make two different requests
 * render the same key (session `1` + id `"2/3"` vs session `12` + id `"3"`).
 * What the client chose (the id; method and tool where they are part of it) is
 * bounded (boundedText): a long id is keyed by its digest, as distinct as the id.
 */
export type RequestId = string | number;

export interface RequestKeyParts {
  actor: string;
  /** Transport session (MCP session id, or the stdio connection). null: ids have no session scope. */
  session: string | null;
  id: RequestId;
  /** Used only when `session` is null: ids are then only meaningful together with what they call. */
  method?: string;
  tool?: string;
}

/** A numeric and a string id that print the same are one key — the JSON-RPC reading of a repeated id. */
export function renderRequestId(id: RequestId): string {
  return typeof id === 'number' ? String(id) : id;
}

export function requestKey(parts: RequestKeyParts): string {
  const base = [
    parts.actor,
    parts.session === null ? '\u0000no-session' : `s:${parts.session}`,
    boundedText(renderRequestId(parts.id)),
  ];
  if (parts.session === null) base.push(boundedText(parts.method ?? ''), boundedText(parts.tool ?? ''));
  return JSON.stringify(base);
}
