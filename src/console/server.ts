import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html } from 'hono/html';
import type { Registry } from 'prom-client';
import { decideAsOperator } from '../approval/operator-decision.js';
import { MissingPackageError, messageOf } from '../errors.js';
import { isResolution, resolveAsOperator } from '../executions/operator.js';
import { defaultAllowedHosts, hostOriginRefusal, originsOf } from '../front/host-origin.js';
import type { StoreVerifyReport } from '../journal/verify-store.js';
import type { ExecutionStore } from '../store/types.js';
import { OperatorAuth, operatorName, SESSION_COOKIE, SESSION_TTL_MS } from './auth.js';
import { COPY_SCRIPT } from './copy-script.js';
import { type Html, page } from './layout.js';
import { LIVE_SCRIPT } from './live-script.js';
import { bearerKeys, LoginThrottle, loginKeys, retryAfterSeconds } from './login-throttle.js';
import { activityPage } from './pages/activity.js';
import { approvalsPage, type DecisionNotice } from './pages/approvals.js';
import { type Decision, decidePage } from './pages/decide.js';
import { executionPage } from './pages/execution.js';
import { executionFilters, executionsPage } from './pages/executions.js';
import { journalPage } from './pages/journal.js';
import { loginPage } from './pages/login.js';
import { sessionPage, sessionsPage } from './pages/sessions.js';
import { STYLESHEET } from './stylesheet.js';

export interface ConsoleOptions {
  store: ExecutionStore;
  /** The operator token (see auth.ts: loadOperatorToken). */
  token: string;
  host?: string;
  /** 0: any free port. */
  port?: number;
  /** Host header values accepted; default: the listen address and loopback names on its port. */
  allowedHosts?: string[];
  /** The journals' verification, as `idem audit verify` does it for this store. */
  verifyJournal: () => Promise<StoreVerifyReport>;
  /**
   * Served at /metrics (operator token as a bearer, or a logged-in session): the gateway's when it
   * mounts the console, else the console's own; absent when prom-client is not installed.
   */
  metrics?: Registry;
  clock?: () => number;
}

export interface RunningConsole {
  url: string;
  close(): Promise<void>;
}

interface Operator {
  name: string;
  csrf: string;
  sessionId: string;
}

type Env = { Variables: { operator: Operator } };

/** Form bodies are small: a note, a reason. */
const MAX_FORM_BYTES = 64 * 1024;

/**
 * The console's routes. Every request: Host and Origin checked (the rule of
 * every Idem listener). Every page but the login: a session from the login
 * cookie. Every POST: that session's CSRF token. Nothing renders a secret —
 * arguments appear as the store keeps them, redacted and bounded.
 */
export function consoleApp(
  options: ConsoleOptions,
  allowed: () => { hosts: Set<string>; origins: Set<string> },
) {
  const { store } = options;
  const clock = options.clock ?? Date.now;
  const auth = new OperatorAuth(options.token, options.clock);
  const throttle = new LoginThrottle(options.clock);
  const app = new Hono<Env>();

  app.use(async (c, next) => {
    const { hosts, origins } = allowed();
    const refusal = hostOriginRefusal(
      { host: c.req.header('host'), origin: c.req.header('origin') },
      hosts,
      origins,
    );
    if (refusal) return c.text(refusal, 403);
    await next();
    c.header(
      'content-security-policy',
      "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'",
    );
    c.header('x-frame-options', 'DENY');
    c.header('x-content-type-options', 'nosniff');
    // Not no-referrer: with it a browser sends `Origin: null` on its own form posts, which the Origin check refuses.
    c.header('referrer-policy', 'same-origin');
    c.header('cache-control', 'no-store');
  });
  app.use(bodyLimit({ maxSize: MAX_FORM_BYTES, onError: (c) => c.text('Form too large', 413) }));

  app.get('/static/console.css', (c) =>
    c.body(STYLESHEET, 200, { 'content-type': 'text/css; charset=utf-8' }),
  );
  for (const [name, script] of [
    ['live.js', LIVE_SCRIPT],
    ['copy.js', COPY_SCRIPT],
  ] as const)
    app.get(`/static/${name}`, (c) =>
      c.body(script, 200, { 'content-type': 'text/javascript; charset=utf-8' }),
    );

  app.get('/login', (c) => c.html(page({ title: 'Log in' }, loginPage())));
  app.post('/login', async (c) => {
    const form = await c.req.parseBody();
    const name = operatorName(form.operator);
    const token = typeof form.token === 'string' ? form.token : undefined;
    if (!name)
      return c.html(page({ title: 'Log in' }, loginPage('Give your name: letters, digits, . _ @ -')), 400);
    const keys = loginKeys(clientAddress(c), name);
    const wait = throttle.retryAfterMs(keys);
    if (wait > 0) {
      const seconds = retryAfterSeconds(wait);
      return c.html(
        page(
          { title: 'Log in' },
          loginPage(
            `Too many failed logins from this address or for this name: try again in ${seconds} s. The token was not checked.`,
          ),
        ),
        429,
        { 'retry-after': String(seconds) },
      );
    }
    if (!auth.tokenMatches(token)) {
      throttle.failed(keys);
      return c.html(page({ title: 'Log in' }, loginPage('Wrong token.')), 401);
    }
    throttle.succeeded(keys);
    setCookie(c, SESSION_COOKIE, auth.open(name), {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      maxAge: SESSION_TTL_MS / 1000,
    });
    return c.redirect('/executions', 303);
  });

  // Prometheus scrapes with the operator token as a bearer; a logged-in browser may look too.
  app.get('/metrics', async (c) => {
    const registry = options.metrics;
    if (!auth.session(getCookie(c, SESSION_COOKIE))) {
      const bearer = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1];
      const keys = bearerKeys(clientAddress(c));
      const wait = throttle.retryAfterMs(keys);
      if (wait > 0)
        return c.text(
          `Too many wrong bearer tokens from this address: try again in ${retryAfterSeconds(wait)} s`,
          429,
          { 'retry-after': String(retryAfterSeconds(wait)) },
        );
      if (!auth.tokenMatches(bearer)) {
        if (bearer !== undefined) throttle.failed(keys);
        return c.text('Unauthorized: send the operator token as a bearer token', 401, {
          'www-authenticate': 'Bearer realm="idem-console"',
        });
      }
      throttle.succeeded(keys);
    }
    if (!registry) return c.text(`No metrics here. ${new MissingPackageError('prom-client').message}`, 404);
    return c.body(await registry.metrics(), 200, { 'content-type': registry.contentType });
  });

  app.use(async (c, next) => {
    const sessionId = getCookie(c, SESSION_COOKIE);
    const session = auth.session(sessionId);
    if (!session || !sessionId) {
      if (c.req.method === 'GET') return c.redirect('/login', 303);
      return c.text('Unauthorized: log in first', 401);
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const form = await c.req.parseBody();
      if (!auth.csrfMatches(session, form.csrf)) return c.text('Forbidden: missing or wrong CSRF token', 403);
    }
    c.set('operator', { name: session.operator, csrf: session.csrf, sessionId });
    await next();
  });

  const render = (
    c: Context<Env>,
    section: Parameters<typeof page>[0]['section'],
    title: string,
    body: Html,
    status: 200 | 400 | 404 | 409 = 200,
    live: boolean | 'stable-rows' = false,
  ) =>
    c.html(
      page(
        {
          title,
          section,
          operator: c.get('operator'),
          live: live !== false,
          stableRows: live === 'stable-rows',
          renderedAt: clock(),
        },
        body,
      ),
      status,
    );

  app.post('/logout', (c) => {
    auth.close(c.get('operator').sessionId);
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.redirect('/login', 303);
  });

  app.get('/', (c) => c.redirect('/executions', 303));
  app.get('/executions', async (c) =>
    render(
      c,
      'executions',
      'Executions',
      await executionsPage(store, executionFilters(c.req.query())),
      200,
      true,
    ),
  );
  app.get('/executions/:ref', async (c) => {
    const body = await executionPage(store, c.req.param('ref'), c.get('operator').csrf);
    return body
      ? render(c, 'executions', c.req.param('ref'), body, 200, true)
      : render(c, 'executions', 'Not found', notFound(`No execution ${c.req.param('ref')}`), 404);
  });
  app.post('/executions/:ref/resolve', async (c) => {
    const ref = c.req.param('ref');
    const form = await c.req.parseBody();
    const operator = c.get('operator');
    const note = typeof form.note === 'string' ? form.note : '';
    const outcome = isResolution(form.as)
      ? await resolveAsOperator(store, ref, form.as, operator.name, note)
      : ({ resolved: false, reason: 'choose completed or failed' } as const);
    const notice = outcome.resolved
      ? { ok: true, text: `Resolved: ${outcome.before.state} → ${outcome.after.state} (by ${operator.name})` }
      : { ok: false, text: outcome.reason };
    const body = await executionPage(store, ref, operator.csrf, notice);
    return render(c, 'executions', ref, body ?? notFound(notice.text), outcome.resolved ? 200 : 409);
  });

  app.get('/approvals', async (c) =>
    render(
      c,
      'approvals',
      'Approvals',
      await approvalsPage(store, c.req.query('all') === '1'),
      200,
      'stable-rows',
    ),
  );
  // The confirmation: the original record, then the decision (posted below).
  app.get('/approvals/:ref/decide', async (c) => {
    const ref = c.req.param('ref');
    const decision = c.req.query('decision');
    const digest = c.req.query('digest');
    const body = await decidePage(store, ref, c.get('operator').csrf, {
      ...(decision === 'approved' || decision === 'denied' ? { decision: decision as Decision } : {}),
      ...(digest ? { digest } : {}),
    });
    return body
      ? render(c, 'approvals', `Decide ${ref}`, body)
      : render(c, 'approvals', 'Not found', notFound(`No approval request for ${ref}`), 404);
  });
  app.post('/approvals/:ref/decide', async (c) => {
    const ref = c.req.param('ref');
    const form = await c.req.parseBody();
    const operator = c.get('operator');
    const decision = form.decision;
    if (decision !== 'approved' && decision !== 'denied')
      return render(c, 'approvals', 'Approvals', notFound('choose approve or deny'), 400);
    // The digest the page showed: without it the decision could land on a request nobody read.
    const digest = typeof form.digest === 'string' ? form.digest : '';
    if (digest === '')
      return render(
        c,
        'approvals',
        'Approvals',
        await approvalsPage(store, false, {
          ok: false,
          text: `Nothing was decided: the decision on ${ref} did not name the arguments digest it was shown. Decide from the Approvals page.`,
        }),
        400,
      );
    const reason =
      typeof form.reason === 'string' && form.reason.trim() !== '' ? form.reason.trim() : undefined;
    const outcome = await decideAsOperator(
      store,
      ref,
      decision,
      { by: operator.name, via: 'console', ...(reason !== undefined ? { reason } : {}) },
      digest,
    );
    const view = outcome.view;
    const notice: DecisionNotice =
      outcome.decided && view
        ? {
            ok: true,
            text:
              `${view.ref}: ${decision} by ${operator.name} — ${view.tool} on ${view.channel}:${view.target} ` +
              `with arguments ${view.arguments} (digest ${view.argumentsDigest}).` +
              (decision === 'approved' ? ' It runs once, when its caller asks again.' : ''),
            decided: { ref: view.ref, argumentsDigest: view.argumentsDigest, decision },
          }
        : { ok: false, text: outcome.reason ?? 'not decided' };
    return render(
      c,
      'approvals',
      'Approvals',
      await approvalsPage(store, false, notice),
      outcome.decided ? 200 : 409,
    );
  });

  app.get('/sessions', async (c) => render(c, 'sessions', 'Sessions', await sessionsPage(store), 200, true));
  app.get('/sessions/:id', async (c) => {
    const body = await sessionPage(store, c.req.param('id'));
    return body
      ? render(c, 'sessions', 'Session', body, 200, true)
      : render(c, 'sessions', 'Not found', notFound(`No session ${c.req.param('id')}`), 404);
  });
  app.get('/journal', async (c) => render(c, 'journal', 'Journal', await journalPage(options.verifyJournal)));
  app.get('/activity', async (c) => render(c, 'activity', 'Activity', await activityPage(store), 200, true));
  app.notFound((c) => c.text('Not found', 404));
  app.onError((error, c) => c.text(`The console could not answer: ${messageOf(error)}`, 500));
  return app;
}

/**
 * The peer's address, as the socket has it. Not X-Forwarded-For, which any
 * client can write: behind a proxy every login shares the proxy's address.
 */
function clientAddress(c: Context<Env>): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    // No socket (app.request in a test): one shared key, which fails closed.
    return 'unknown';
  }
}

/** A refusal or miss, said in the page (escaped, like every value). */
function notFound(text: string): Html {
  return html`<div class="notice error" role="alert">${text}</div>`;
}

/** Starts the console on host:port; resolves once it listens. */
export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  const host = options.host ?? '127.0.0.1';
  let hosts = new Set<string>();
  let origins = new Set<string>();
  const app = consoleApp(options, () => ({ hosts, origins }));
  const { server, port } = await new Promise<{ server: ReturnType<typeof serve>; port: number }>(
    (resolve, reject) => {
      const server = serve(
        { fetch: app.fetch, hostname: host, port: options.port ?? 8788 },
        (info: AddressInfo) => resolve({ server, port: info.port }),
      );
      server.once('error', reject);
    },
  );
  hosts = new Set(options.allowedHosts ?? defaultAllowedHosts(host, port));
  origins = new Set(originsOf(hosts));
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
