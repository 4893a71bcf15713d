import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { Fingerprinter, ServerRecord } from './fingerprint.js';
import { isLaunchVariable } from './launch-variables.js';
import { packageRunner, withoutVersion } from './package-runner.js';

/**
 * An upstream MCP server as the gateway is told to reach it: a command it starts (with the
 * environment it gives it) or a URL (with the headers it sends), and the operator's own name for
 * what it is, when given (`upstreams.<name>.identity`).
 */
export type UpstreamDescription =
  | {
      identity?: string;
      command: string;
      args?: readonly string[];
      cwd?: string;
      /** The environment the upstream is given (gateway/upstream-env.ts `upstreamEnvironment`). */
      env?: Readonly<Record<string, string>>;
    }
  | { identity?: string; url: string; headers?: Readonly<Record<string, string>> };

export interface ServerRecordOptions {
  /** The gateway's working directory: where a relative path resolves when the upstream has no cwd of its own. */
  cwd: string;
  /** Whether a path names an existing file or directory; the file system by default. */
  exists?: (path: string) => boolean;
}

/**
 * What an upstream server IS, as the `target` of its calls' canonical records (docs/gateway.md,
 * "What is the same server"; ADR 0043) — the one home of that rule. Two upstreams get one
 * record exactly when they are the same server:
 * - named by the operator (`identity:`): that name alone, whatever runs;
 * - a command: the command as given; its arguments, each one that names an existing file or
 *   directory made absolute (`path.resolve`, not realpath: a `current -> releases/N` deploy keeps
 *   its identity), a package runner's package without its version (an upgraded server is the same
 *   server, and a retry across the upgrade finds its execution); the cwd when given; and the
 *   environment it is given, less the variables that describe the launch (launch-variables.ts);
 * - a URL: normalised (WHATWG), without its fragment; and the headers sent with every request,
 *   names lower-cased (two accounts behind one URL are two servers).
 * The record is only ever digested with the installation's key (`Fingerprinter.server`): the
 * values it holds are never stored or shown.
 */
export function serverRecord(upstream: UpstreamDescription, options: ServerRecordOptions): ServerRecord {
  if (upstream.identity !== undefined) return { kind: 'named', identity: upstream.identity };
  if ('url' in upstream) {
    const url = new URL(upstream.url);
    url.hash = '';
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(upstream.headers ?? {})) headers[name.toLowerCase()] = value;
    return { kind: 'http', url: url.href, headers };
  }
  const exists = options.exists ?? existsSync;
  const base = upstream.cwd ? resolve(options.cwd, upstream.cwd) : options.cwd;
  const pathOf = (arg: string) => {
    if (arg === '' || arg.startsWith('-')) return undefined;
    const path = resolve(base, arg);
    return exists(path) ? path : undefined;
  };
  const args = (upstream.args ?? []).map((arg) => {
    // `--root=./data`: the value after `=` is a path like any other argument.
    const equals = arg.startsWith('-') ? arg.indexOf('=') : -1;
    if (equals > 0) {
      const path = pathOf(arg.slice(equals + 1));
      return path ? `${arg.slice(0, equals + 1)}${path}` : arg;
    }
    return pathOf(arg) ?? arg;
  });
  const runner = packageRunner(upstream.command, upstream.args ?? []);
  // A package argument is a registry name unless it is written as a path (`./pkg`, `/opt/pkg`):
  // a directory named like the package in the cwd does not make it one.
  for (const found of runner?.packages ?? []) {
    const writtenAsPath = isAbsolute(found.spec) || /^\.\.?([\\/]|$)/.test(found.spec);
    const spec = writtenAsPath ? pathOf(found.spec) : undefined;
    args[found.index] = `${found.prefix}${spec ?? withoutVersion(found.spec, runner?.ecosystem ?? 'npm')}`;
  }
  // A bare command is looked up on PATH; one with a directory in it is a file like an argument.
  const command = /[\\/]/.test(upstream.command)
    ? (pathOf(upstream.command) ?? upstream.command)
    : upstream.command;
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(upstream.env ?? {}))
    if (!isLaunchVariable(name)) env[name] = value;
  return { kind: 'stdio', command, args, cwd: upstream.cwd ? base : null, env };
}

/** `srv_…`: the keyed digest of what the upstream is (`serverRecord`). Computed once per upstream. */
export function upstreamIdentity(
  fingerprinter: Fingerprinter,
  upstream: UpstreamDescription,
  options: ServerRecordOptions,
): string {
  return fingerprinter.server(serverRecord(upstream, options));
}
