import { ENVELOPE } from './revisions.js';
import { TASKS_EXTENSION } from './tasks.js';

/**
 * What a client's request keeps when the gateway passes it on to an upstream: nothing the gateway
 * answers itself (docs/tasks.md). A client's `task` (2025-11-25: "run this as a task") is Idem's to
 * serve, and a server that implements no tasks refuses a request that carries one (the SDK v1's
 * "Server does not support task creation"); the tasks extension a 2026-07-28 request declares in
 * its envelope is Idem's too — an upstream that saw it could answer with a task of its own, whose
 * id would reach the client; and Idem's own `_meta` (`io.idem/…`: a key a gateway in front names, a
 * mark) is for Idem. Every other member passes as it came.
 */

const IDEM_META_PREFIX = 'io.idem/';

type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };

/** `params` without what the gateway answers itself; the same object when it has none of it. */
export function forUpstream<P>(params: P): P {
  if (!params || typeof params !== 'object') return params;
  const { task, _meta, ...rest } = params as Params;
  const meta = metaForUpstream(_meta);
  if (task === undefined && meta === _meta) return params;
  return (meta === undefined ? rest : { ...rest, _meta: meta }) as P;
}

/** A request's `_meta` without Idem's own keys and the tasks extension's declaration; the same object when it has neither. */
export function metaForUpstream(
  meta: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (!meta || typeof meta !== 'object') return meta;
  const capabilities = meta[ENVELOPE.clientCapabilities] as { extensions?: unknown } | undefined;
  const extensions = capabilities?.extensions as Record<string, unknown> | undefined;
  const declaresTasks = !!extensions && typeof extensions === 'object' && TASKS_EXTENSION in extensions;
  const own = Object.keys(meta).filter((key) => key.startsWith(IDEM_META_PREFIX));
  if (!declaresTasks && own.length === 0) return meta;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(meta)) if (!key.startsWith(IDEM_META_PREFIX)) kept[key] = value;
  if (declaresTasks) {
    const { [TASKS_EXTENSION]: _tasks, ...others } = extensions as Record<string, unknown>;
    kept[ENVELOPE.clientCapabilities] = { ...capabilities, extensions: others };
  }
  return kept;
}
