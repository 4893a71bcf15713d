/**
 * What the tasks upstreams (tasks-upstream.ts on the v2 SDK, tasks-upstream-v1.ts on the v1 SDK)
 * record of their effect tools, started with `--dir <dir>`, so that a test counts on the far side
 * of the gateway what happened and when — a condition to wait on, never a guess:
 *
 * - `charges.log`: one JSON line `{key, pid}` per charge, written before the tool answers (the
 *   effect has happened);
 * - `cancels.log`: one JSON line `{key}` per `notifications/cancelled` the upstream got for a call
 *   of an effect tool (which answers all the same, as a server whose effect cannot be called back);
 * - `asked.log`: one JSON line `{key}` per question an effect tool asked its client;
 * - a release file a call names (`release_file`): the tool answers once it exists in `<dir>`.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '../support/wait.js';

const CHARGES = 'charges.log';
const CANCELS = 'cancels.log';
const ASKED = 'asked.log';
/** How often a held tool looks for its release file. */
const RELEASE_POLL_MS = 20;
/** A held tool never outlives a test run. */
const MAX_HOLD_MS = 120_000;

function linesOf(dir: string, file: string): { key: string }[] {
  const path = join(dir, file);
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { key: string });
}

const countOf = (dir: string, file: string, key: string) =>
  linesOf(dir, file).filter((line) => line.key === key).length;

/** The effect: one line, written before the tool answers. */
export function recordCharge(dir: string, key: string): void {
  appendFileSync(join(dir, CHARGES), `${JSON.stringify({ key, pid: process.pid })}\n`);
}

export function recordCancel(dir: string, key: string): void {
  appendFileSync(join(dir, CANCELS), `${JSON.stringify({ key })}\n`);
}

export function recordAsked(dir: string, key: string): void {
  appendFileSync(join(dir, ASKED), `${JSON.stringify({ key })}\n`);
}

/** How many times `key` was charged. */
export const chargesOf = (dir: string, key: string) => countOf(dir, CHARGES, key);
/** How many cancels the upstream got for a call of `key`. */
export const cancelsOf = (dir: string, key: string) => countOf(dir, CANCELS, key);
/** How many questions were asked for `key`. */
export const askedOf = (dir: string, key: string) => countOf(dir, ASKED, key);

/** Resolves once `<dir>/<file>` exists (a cancel does not stop it: the effect cannot be called back). */
export async function released(dir: string, file: string | undefined): Promise<void> {
  if (!file) return;
  const started = Date.now();
  while (!existsSync(join(dir, file))) {
    if (Date.now() - started > MAX_HOLD_MS) throw new Error(`${file} was never released`);
    await sleep(RELEASE_POLL_MS);
  }
}

/** The key of an effect tool's call, from its arguments. */
export function keyOf(args: unknown): string {
  const key = (args as { key?: unknown } | undefined)?.key;
  return typeof key === 'string' ? key : '';
}
