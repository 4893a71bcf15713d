import type { JWTPayload } from 'jose';

/**
 * The scopes a token grants: the OAuth `scope` claim (RFC 9068, space-separated),
 * else `scp` (a string in Entra ID, an array in Okta).
 */
export function grantedScopes(payload: JWTPayload): string[] {
  const claim = payload.scope ?? payload.scp;
  const words = typeof claim === 'string' ? claim.split(' ') : Array.isArray(claim) ? claim : [];
  return words.filter((s): s is string => typeof s === 'string' && s.length > 0);
}

/** Which scopes a request needs: some on every request, more on calls to some tools. */
export class ScopePolicy {
  readonly #everyRequest: readonly string[];
  readonly #byTool: Readonly<Record<string, readonly string[]>>;
  readonly #names: (key: string, tool: string) => boolean;

  /**
   * `names(key, tool)`: whether a key of `byTool` names the tool called by
   * this name (the gateway's naming rule: a key may name a tool otherwise
   * than as published). Default: only the exact name.
   */
  constructor(
    everyRequest: readonly string[],
    byTool: Readonly<Record<string, readonly string[]>> = {},
    names: (key: string, tool: string) => boolean = (key, tool) => key === tool,
  ) {
    this.#everyRequest = [...new Set(everyRequest)];
    this.#byTool = byTool;
    this.#names = names;
  }

  /** Needed by every request. */
  get everyRequest(): readonly string[] {
    return this.#everyRequest;
  }

  /** Needed by a tools/call of `tool`: the request's scopes and those of every key that names it. */
  forTool(tool: string): readonly string[] {
    const own = Object.entries(this.#byTool)
      .filter(([key]) => this.#names(key, tool))
      .flatMap(([, scopes]) => scopes);
    return [...new Set([...this.#everyRequest, ...own])];
  }

  /** Every scope named anywhere (RFC 9728 scopes_supported). */
  get supported(): string[] {
    return [...new Set([...this.#everyRequest, ...Object.values(this.#byTool).flat()])];
  }
}

/** The scopes of `needed` that `granted` lacks. */
export function missingScopes(granted: readonly string[], needed: readonly string[]): string[] {
  const have = new Set(granted);
  return needed.filter((scope) => !have.has(scope));
}
