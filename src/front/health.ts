/**
 * Probes for whoever runs the gateway (a load balancer, Kubernetes, systemd):
 * `/healthz`, the process answers; `/readyz`, it can serve calls now. Both are
 * answered before Host checks and auth: a probe sends neither a token nor the
 * public Host name, and what they say is kept to what a stranger may know
 * (docs/security.md).
 */
import type { ServerResponse } from 'node:http';
import { sendJson } from './replies.js';

export const LIVENESS_PATH = '/healthz';
export const READINESS_PATH = '/readyz';

/** Whether calls can be served now, and why not: counts only, never upstream names or errors. */
export interface Readiness {
  ready: boolean;
  store: 'ok' | 'unreachable';
  upstreams: { configured: number; down: number };
  /** The config (or a flag) names a tool that is not published: no tool runs until it is fixed and the gateway restarted. */
  config?: 'invalid';
  /** Shutting down: no new calls are taken (set by the front, never by the store or upstreams). */
  draining?: true;
}

/** What a front without a readiness of its own says: ready whenever the process answers. */
export const READY: Readiness = Object.freeze({
  ready: true,
  store: 'ok',
  upstreams: { configured: 0, down: 0 },
});

/** Answers a probe on its path (true), or leaves the request alone (false). */
export async function answerProbe(
  method: string | undefined,
  pathname: string,
  res: ServerResponse,
  readiness: (() => Promise<Readiness>) | undefined,
): Promise<boolean> {
  if (method !== 'GET' && method !== 'HEAD') return false;
  if (pathname === LIVENESS_PATH) {
    sendJson(res, 200, { status: 'ok' });
    return true;
  }
  if (pathname !== READINESS_PATH) return false;
  const state: Readiness = readiness ? await readiness() : READY;
  sendJson(res, state.ready ? 200 : 503, { status: state.ready ? 'ready' : 'not_ready', ...state });
  return true;
}
