import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import type { UpstreamSpec } from '../../dispatch/mcp/index.js';

/**
 * Why a stdio upstream cannot be started now, as its spawn would fail (ENOENT, EACCES), found
 * without starting it: its command is not on the PATH it is given, or is not executable, or its
 * cwd is missing. Undefined when it can be spawned (what it does then is another matter), and for
 * an HTTP upstream. A client starts upstreams (ADR 0016), so this is what the gateway can know of
 * one before a client comes: what `/readyz` and the start-up log say.
 */
export function unstartableReason(spec: UpstreamSpec): string | undefined {
  if (!('command' in spec)) return undefined;
  // Windows finds commands through PATHEXT and cmd shims (cross-spawn): not guessed at here.
  if (process.platform === 'win32') return undefined;
  const cwd = spec.cwd ?? process.cwd();
  if (!isDirectory(cwd)) return `its working directory ${cwd} does not exist`;
  const command = spec.command;
  if (command.includes('/')) {
    const path = isAbsolute(command) ? command : resolve(cwd, command);
    if (!isFile(path)) return `its command ${command} does not exist (${path})`;
    return isExecutable(path) ? undefined : `its command ${path} is not executable`;
  }
  // As spawn looks it up: the PATH of the environment the upstream is given, else the gateway's.
  const searchPath = spec.env?.PATH ?? process.env.PATH ?? '';
  const found = searchPath
    .split(delimiter)
    .map((dir) => join(dir === '' ? cwd : resolve(cwd, dir), command))
    .filter(isFile);
  if (found.some(isExecutable)) return undefined;
  if (found.length > 0) return `its command ${found[0]} is not executable`;
  return `its command ${command} is not on its PATH (spawn ${command} ENOENT)`;
}

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

function isFile(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
