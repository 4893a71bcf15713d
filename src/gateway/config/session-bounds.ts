import { durationMs } from '../../contracts/duration.js';
import type { HttpFrontOptions } from '../../front/http-options.js';
import type { GatewayConfig } from './config.js';

type HttpListen = NonNullable<NonNullable<GatewayConfig['listen']>['http']>;

/** `listen.http`'s session bounds (idle timeouts, caps) as the HTTP front takes them; what is unset keeps the front's defaults. */
export function sessionBoundsOf(
  http: HttpListen | undefined,
): Pick<HttpFrontOptions, 'sessionIdleTimeoutMs' | 'unusedSessionTimeoutMs' | 'sessionCaps'> {
  const ms = (key: 'session_idle_timeout' | 'session_unused_timeout') => {
    const value = http?.[key];
    return value === undefined ? undefined : durationMs(value, `listen.http.${key}`);
  };
  const idle = ms('session_idle_timeout');
  const unused = ms('session_unused_timeout');
  return {
    ...(idle !== undefined ? { sessionIdleTimeoutMs: idle } : {}),
    ...(unused !== undefined ? { unusedSessionTimeoutMs: unused } : {}),
    sessionCaps: {
      ...(http?.max_sessions ? { maxSessions: http.max_sessions } : {}),
      ...(http?.max_sessions_per_actor ? { maxSessionsPerActor: http.max_sessions_per_actor } : {}),
    },
  };
}
