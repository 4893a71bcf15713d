/**
 * `idem gateway` as its own process (the CLI) in front of a plain tasks upstream of either SDK
 * generation — test/conformance/tasks-upstream-v1.ts (the v1 SDK's low-level `Server`: pushed
 * elicitation, JSON-RPC errors) or tasks-upstream.ts (the v2 SDK, 2026-07-28 `input_required`) —
 * started with its effect tools (charges.ts), a 2026-07-28 client that can take tasks, and the
 * store the gateway writes, read beside it. For the tests of Idem's tasks in front of servers as
 * people run them (test/gateway/tasks-plain-upstreams.test.ts) and the race rounds
 * (task-races.ts, scripts/task-races.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GatewayToolContractConfig } from '../../src/gateway/config/index.js';
import { SqliteStore } from '../../src/store/index.js';
import type { ExecutionRecord } from '../../src/store/types.js';
import { startFixture, TASKS_UPSTREAM_PATH, TASKS_UPSTREAM_V1_PATH } from '../conformance/harness.js';
import { fixtureArgs } from './compiled-fixtures.js';
import { type GatewayProcess, startGatewayProcess } from './gateway-process.js';
import { type ModernTasksClient, modernTasksClient, type Reply } from './modern-tasks.js';
import { REPO_ROOT } from './node22.js';
import { runIdem } from './run-cli.js';
import { freshDir } from './temp-dirs.js';
import { waitUntil } from './wait.js';

/** The SDK generation an upstream is built on. */
export type Generation = 'v1' | 'v2';
export const GENERATIONS: readonly Generation[] = ['v1', 'v2'];

const PATHS: Record<Generation, string> = { v1: TASKS_UPSTREAM_V1_PATH, v2: TASKS_UPSTREAM_PATH };

/** A task at once, for an effectful tool. */
const TASK_AT_ONCE: GatewayToolContractConfig = { replay: 'review', task: 'optional', task_after: '0s' };

/**
 * The contracts: `plain` is the upstream as it is; `approved` the same upstream (another process)
 * whose `charge` waits for approval and runs only as a task.
 */
export const PLAIN_TOOLS: Record<string, GatewayToolContractConfig> = {
  plain__charge: TASK_AT_ONCE,
  plain__charge_then_fail: TASK_AT_ONCE,
  plain__ask_then_charge: TASK_AT_ONCE,
  plain__multi_input: TASK_AT_ONCE,
  // Cancelled, it drops its answer (as both SDKs do): unknown once this timeout has passed.
  plain__slow_compute: { ...TASK_AT_ONCE, timeout: '1s' },
  approved__charge: { replay: 'review', approval: 'every_call', task: 'required' },
};

export interface PlainTasksGateway {
  generation: Generation;
  url: string;
  /** Where the upstreams record what they did (charges.ts). */
  counts: string;
  db: string;
  process: GatewayProcess;
  /** The gateway's store, read (and only read) beside it. */
  store: SqliteStore;
  client: ModernTasksClient;
  /** The execution a task answer names. */
  executionOf(taskId: string): Promise<ExecutionRecord>;
  /** `idem audit verify` on the store: its exit code and what it printed. */
  verify(): Promise<{ code: number; stdout: string }>;
  close(): Promise<void>;
}

/** The upstream as a stdio command, recording into `counts`. */
export function plainUpstream(generation: Generation, counts: string) {
  return {
    command: process.execPath,
    args: [...fixtureArgs(PATHS[generation]), '--stdio', '--dir', counts],
    cwd: REPO_ROOT,
  };
}

/**
 * Starts the gateway process; `upstreams` (given the counting directory) and `tools` add to the
 * plain ones. `http`: the plain upstream is one server over Streamable HTTP (both names reach it),
 * not a process per name over stdio.
 */
export async function startPlainTasksGateway(
  generation: Generation,
  extra: {
    upstreams?: (counts: string) => Record<string, unknown>;
    tools?: Record<string, GatewayToolContractConfig>;
    http?: boolean;
  } = {},
): Promise<PlainTasksGateway> {
  const counts = freshDir(`plain-${generation}-counts`);
  const dataDir = freshDir(`plain-${generation}-data`);
  const server = extra.http
    ? await startFixture({ path: PATHS[generation], args: ['--dir', counts] })
    : undefined;
  const upstream = server ? { url: server.url } : plainUpstream(generation, counts);
  const config = {
    data_dir: dataDir,
    upstreams: {
      plain: upstream,
      approved: upstream,
      ...extra.upstreams?.(counts),
    },
    tools: { ...PLAIN_TOOLS, ...extra.tools },
  };
  const gateway = await startGatewayProcess(config, join(dataDir, 'gateway.json')).catch(
    async (error: unknown) => {
      await server?.close();
      throw error;
    },
  );
  const db = join(dataDir, 'idem.db');
  const store = await SqliteStore.open({ path: db });
  return {
    generation,
    url: gateway.url,
    counts,
    db,
    process: gateway,
    store,
    client: modernTasksClient(gateway.url),
    async executionOf(taskId) {
      const found = await store.getTask(taskId);
      if (!found) throw new Error(`no task ${taskId}`);
      return found.record;
    },
    async verify() {
      const result = await runIdem(['audit', 'verify', '--db', db], { dataDir });
      return { code: result.code, stdout: result.stdout + result.stderr };
    },
    async close() {
      await gateway.kill();
      await store.close();
      await server?.close();
    },
  };
}

/** States an execution may still leave: a round waits until it is in none of them. */
const UNSETTLED = new Set(['accepted', 'awaiting_approval', 'authorized', 'dispatched']);

/** The execution of `taskId` once it has settled (finished, or unknown). */
export async function settled(gateway: PlainTasksGateway, taskId: string): Promise<ExecutionRecord> {
  let record: ExecutionRecord | undefined;
  await waitUntil(`the execution of ${taskId} to settle`, async () => {
    record = await gateway.executionOf(taskId);
    return !UNSETTLED.has(record.state);
  });
  return record as ExecutionRecord;
}

/** The task as `tasks/get` reads it, once `until` holds. */
export async function taskWhen(
  gateway: PlainTasksGateway,
  taskId: string,
  until: (task: Record<string, unknown>) => boolean,
  what: string,
): Promise<Record<string, unknown>> {
  let task: Record<string, unknown> | undefined;
  await waitUntil(`task ${taskId}: ${what}`, async () => {
    task = (await gateway.client.get(taskId)).result;
    return task !== undefined && until(task);
  });
  return task as Record<string, unknown>;
}

/** The keys a task asks its client now (`inputRequests`). */
export function askedKeys(task: Record<string, unknown>): string[] {
  return Object.keys((task.inputRequests ?? {}) as Record<string, unknown>);
}

/** A release file for an effect tool's call: the tool answers once it exists. */
export function release(gateway: PlainTasksGateway, file: string): void {
  writeFileSync(join(gateway.counts, file), '');
}

/** The first text of a stored outcome. */
export function storedText(record: ExecutionRecord): string | undefined {
  const first = record.outcome?.result.content?.[0] as { text?: unknown } | undefined;
  return typeof first?.text === 'string' ? first.text : undefined;
}

/** A reply's result, or a throw that says what came instead. */
export function resultOf(reply: Reply): Record<string, unknown> {
  if (!reply.result) throw new Error(`no result: ${JSON.stringify(reply)}`);
  return reply.result;
}
