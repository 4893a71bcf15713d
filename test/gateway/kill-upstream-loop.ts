/**
 * The upstream kill loop (issue 8 item 1), shared by
 * test/gateway/upstream-kill.test.ts (a few rounds) and
 * scripts/reliability-kill-upstream.ts (the full count).
 *
 * `idem gateway` runs as its own process (the CLI, as an operator runs it) in
 * front of the counting upstream over stdio. Each round sends a burst of
 * concurrent calls with large arguments, so that requests are still being
 * written into the upstream's stdin, and kills the upstream with SIGKILL. What
 * each call was answered is then checked against what the upstream counted.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { idemCodeOf } from '../../src/executions/answers.js';
import { openStore } from '../../src/store/index.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type GatewayProcess, mcpClient, startGatewayProcess } from '../support/gateway-process.js';
import { waitUntil } from '../support/wait.js';
import { executionsOf, readExecutions, readStarts } from './fixtures/counting-server.js';

export interface KillLoopOptions {
  /** A fresh directory for the gateway's data, the config and the upstream's counts. */
  dir: string;
  rounds: number;
  callsPerRound: number;
  /** Size of each call's `payload` argument: large enough to fill the pipe to the upstream. */
  payloadBytes: number;
  /** A call not answered within this long counts as hung. */
  hangMs?: number;
  onRound?(round: number, tally: KillLoopTally): void;
}

export interface KillLoopTally {
  /** Calls sent. */
  tried: number;
  /** Kills after which the gateway process was still alive. */
  survived: number;
  done: number;
  notExecuted: number;
  unknown: number;
  /** Calls without an honest answer: an error instead of an answer, or an answer the upstream's count contradicts. */
  lost: number;
  /** Calls the upstream ran more than once. */
  duplicated: number;
  /** Calls not answered within `hangMs`. */
  hung: number;
  /** Executions still `dispatched` after the loop (their callers were all answered). */
  leftDispatched: number;
  /** The gateway's stderr lines that report an unhandled rejection or exception (Node prints either form). */
  unhandled: string[];
  gatewayAlive: boolean;
  /** Examples of what went wrong, for the report. */
  problems: string[];
}

const CODE_OF: Record<string, keyof KillLoopTally> = {
  IDEM_NOT_EXECUTED: 'notExecuted',
  IDEM_OUTCOME_UNKNOWN: 'unknown',
};

export async function runKillUpstreamLoop(options: KillLoopOptions): Promise<KillLoopTally> {
  const counts = join(options.dir, 'counts');
  const dataDir = join(options.dir, 'data');
  mkdirSync(counts, { recursive: true });
  mkdirSync(dataDir, { recursive: true });
  const hangMs = options.hangMs ?? 45_000;
  const tally: KillLoopTally = {
    tried: 0,
    survived: 0,
    done: 0,
    notExecuted: 0,
    unknown: 0,
    lost: 0,
    duplicated: 0,
    hung: 0,
    leftDispatched: 0,
    unhandled: [],
    gatewayAlive: false,
    problems: [],
  };
  const problem = (text: string) => {
    if (tally.problems.length < 20) tally.problems.push(text);
  };
  let gateway: GatewayProcess | undefined;
  let client: Client | undefined;
  try {
    gateway = await startGatewayProcess(
      {
        data_dir: dataDir,
        // The last process started is the one serving: none is started ahead for a next session.
        upstreams: { counter: { ...countingUpstream(counts), spare: false } },
        // No status probe: an interrupted call is honestly unknown, and stays so.
        tools: { count: { replay: 'status', scope: { business_key: 'key' }, timeout: '5m' } },
        sweep_interval: '1h',
      },
      join(options.dir, 'idem.json'),
    );
    const running = gateway;
    client = await mcpClient(running.url, 'kill-loop-agent');
    const payload = 'x'.repeat(options.payloadBytes);
    for (let round = 0; round < options.rounds; round++) {
      await waitUntil(`upstream start ${round + 1}`, () => readStarts(counts).length > round, 60_000);
      const pid = readStarts(counts).at(-1) as number;
      const countedBefore = readExecutions(counts).length;
      const keys = Array.from({ length: options.callsPerRound }, (_, i) => `r${round}-c${i}`);
      const answers = keys.map((key) =>
        (client as Client)
          .callTool({ name: 'count', arguments: { key, payload } }, undefined, { timeout: hangMs })
          .then(
            (result) => ({ result: result as CallToolResult }),
            (error: unknown) => ({ error: String(error) }),
          ),
      );
      tally.tried += keys.length;
      // Half the rounds kill as soon as the burst is on its way, half once the upstream has acted on
      // one call (the others are then still being written to it or waiting in its pipe).
      if (round % 2 === 1)
        await waitUntil('a first execution', () => readExecutions(counts).length > countedBefore, 60_000);
      process.kill(pid, 'SIGKILL');
      const settled = await Promise.all(answers);
      const alive = running.child.exitCode === null && running.child.signalCode === null;
      if (alive) tally.survived++;
      settled.forEach((answer, i) => {
        const key = keys[i] as string;
        const ran = executionsOf(counts, key);
        if (ran > 1) {
          tally.duplicated++;
          problem(`${key}: ran ${ran} times`);
        }
        if ('error' in answer) {
          if (/timed? ?out/i.test(answer.error)) tally.hung++;
          else tally.lost++;
          problem(`${key}: ${answer.error}`);
          return;
        }
        const code = answer.result.isError ? idemCodeOf(answer.result) : undefined;
        const kind = code === undefined && !answer.result.isError ? 'done' : CODE_OF[code ?? ''];
        const honest =
          kind === 'done'
            ? ran === 1
            : kind === 'notExecuted'
              ? ran === 0
              : kind === 'unknown'
                ? ran <= 1
                : false;
        if (kind) (tally[kind] as number)++;
        if (!honest) {
          tally.lost++;
          problem(
            `${key}: answered ${code ?? (answer.result.isError ? 'an error' : 'done')} but ran ${ran} times`,
          );
        }
      });
      options.onRound?.(round, tally);
      if (!alive) break;
    }
    tally.gatewayAlive = running.child.exitCode === null && running.child.signalCode === null;
    tally.unhandled = running
      .stderr()
      .split('\n')
      .filter((line) => /unhandled|uncaught|Node\.js v\d/i.test(line));
    if (!tally.gatewayAlive)
      problem(
        `the gateway exited (${running.child.exitCode ?? running.child.signalCode}): ${running.stderr().slice(-2000)}`,
      );
  } finally {
    await client?.close().catch(() => {});
    await gateway?.kill();
  }
  // Every caller was answered (or counted as hung), so nothing may still claim to be on its way.
  const store = await openStore({ kind: 'sqlite', path: join(dataDir, 'idem.db') });
  try {
    tally.leftDispatched = (await store.list({ state: 'dispatched' })).length;
  } finally {
    await store.close();
  }
  return tally;
}
