import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { FileCredentialSource } from '../credentials/sources.js';
import { ConsoleTokenError, CredentialError } from '../errors.js';

/**
 * Who may use the console: whoever presents the operator token, once, at the
 * login form (or as a bearer token, for a Prometheus scrape of /metrics).
 * A login opens a session kept in memory: an unguessable id in an HttpOnly,
 * SameSite=Strict cookie, and its own CSRF token that every POST must carry.
 */

export const DEFAULT_TOKEN_ENV = 'IDEM_CONSOLE_TOKEN';
export const SESSION_COOKIE = 'idem_console';
/** A session lasts this long from login; then the operator logs in again. */
export const SESSION_TTL_MS = 12 * 60 * 60_000;
/** Shortest token accepted: a console can approve actions, so a guessable token is refused at start. */
export const MIN_TOKEN_LENGTH = 16;

/**
 * The operator token: from a file (mode 0600, owned by this user — the same
 * rule as credential files) when one is given, else from the environment.
 * There is no tokenless mode, not even on loopback: any local process or
 * page could otherwise approve actions.
 */
export async function loadOperatorToken(source: { file?: string; env?: string }): Promise<string> {
  let token: string | undefined;
  if (source.file) {
    try {
      token = await new FileCredentialSource(source.file).read();
    } catch (error) {
      if (error instanceof CredentialError) throw new ConsoleTokenError(`console token: ${error.message}`);
      throw error;
    }
  } else {
    const name = source.env ?? DEFAULT_TOKEN_ENV;
    token = process.env[name];
    if (!token)
      throw new ConsoleTokenError(
        `the console needs an operator token: set ${name} (or give a token file, mode 0600)`,
      );
  }
  if (token.length < MIN_TOKEN_LENGTH)
    throw new ConsoleTokenError(
      `the console token is shorter than ${MIN_TOKEN_LENGTH} characters: use a random one (openssl rand -hex 32)`,
    );
  return token;
}

interface ConsoleSession {
  operator: string;
  csrf: string;
  expiresAt: number;
}

/** The token check and the sessions of one console. */
export class OperatorAuth {
  readonly #digest: Buffer;
  readonly #sessions = new Map<string, ConsoleSession>();
  readonly #clock: () => number;

  constructor(token: string, clock: () => number = Date.now) {
    this.#digest = sha256(token);
    this.#clock = clock;
  }

  /** Constant-time: the comparison takes as long whatever the guess. */
  tokenMatches(candidate: string | undefined): boolean {
    return candidate !== undefined && timingSafeEqual(sha256(candidate), this.#digest);
  }

  /** Opens a session for `operator`; returns its id (the cookie's value). */
  open(operator: string): string {
    this.#forgetExpired();
    const id = randomBytes(32).toString('base64url');
    this.#sessions.set(id, {
      operator,
      csrf: randomBytes(32).toString('base64url'),
      expiresAt: this.#clock() + SESSION_TTL_MS,
    });
    return id;
  }

  session(id: string | undefined): ConsoleSession | undefined {
    if (!id) return undefined;
    const session = this.#sessions.get(id);
    if (!session) return undefined;
    if (session.expiresAt <= this.#clock()) {
      this.#sessions.delete(id);
      return undefined;
    }
    return session;
  }

  close(id: string | undefined): void {
    if (id) this.#sessions.delete(id);
  }

  /** Constant-time CSRF check of a form's token against its session's. */
  csrfMatches(session: ConsoleSession, candidate: unknown): boolean {
    return typeof candidate === 'string' && timingSafeEqual(sha256(candidate), sha256(session.csrf));
  }

  #forgetExpired(): void {
    const now = this.#clock();
    for (const [id, session] of this.#sessions) if (session.expiresAt <= now) this.#sessions.delete(id);
  }
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** The name decisions are journaled under: `operator:<name>`; letters, digits and . _ @ - only. */
export function operatorName(input: unknown): string | undefined {
  if (typeof input !== 'string') return undefined;
  const name = input.trim();
  return /^[A-Za-z0-9._@-]{1,64}$/.test(name) ? `operator:${name}` : undefined;
}
