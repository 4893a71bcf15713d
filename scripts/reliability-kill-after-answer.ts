/**
 * npx tsx scripts/reliability-kill-after-answer.ts [--rounds 20]
 *
 * Issue 47 at full count: the answer leaves before its outcome is written (docs/lifecycle.md step
 * 11), and a process killed between the two must leave nothing worse than `unknown`. Each round
 * starts the library server of test/fixtures/held-outcome-server.ts (its own process, SQLite) with
 * the outcome's write held, calls `provision` for a new host, waits for the answer and for the
 * store to have been asked for the write, SIGKILLs the process, then asks the same call again
 * through a new process until it stops being in flight. Counted: answers with the result (true);
 * retries answered unknown (the honest answer), replayed as completed (a false success: nothing
 * stored it), or anything else; invocations at the tool (a second one is a duplicate). Exits 1 on
 * any duplicate, false success or other answer.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { idemCodeOf } from '../src/executions/answers.js';
import { fixtureArgs } from '../test/support/compiled-fixtures.js';
import { freshDir, removeTemporaries } from '../test/support/temp-dirs.js';
import { waitUntil } from '../test/support/wait.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '20' } } });
const rounds = Number(values.rounds);
const dataDir = freshDir('kill-after-answer');
const counterFile = join(dataDir, 'invocations.log');
const outcomeFile = join(dataDir, 'held-outcomes.log');
const lines = (file: string) =>
  existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];

async function startServer(holdOutcome: boolean) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...fixtureArgs(join(import.meta.dirname, '../test/fixtures/held-outcome-server.ts'))],
    env: {
      ...process.env,
      IDEM_DATA_DIR: dataDir,
      COUNTER_FILE: counterFile,
      OUTCOME_FILE: outcomeFile,
      HOLD_OUTCOME: holdOutcome ? '1' : '0',
    } as Record<string, string>,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'restarting-agent', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

const tally = { answered: 0, unknown: 0, falseSuccess: 0, other: 0, duplicated: 0, retries: 0 };
const started = performance.now();
try {
  for (let round = 0; round < rounds; round++) {
    const host = `db-${round}`;
    const first = await startServer(true);
    const answer = (await first.client.callTool({
      name: 'provision',
      arguments: { host },
    })) as CallToolResult;
    if (!answer.isError && JSON.stringify(answer.content).includes(`provisioned ${host}`)) tally.answered++;
    await waitUntil('the outcome write asked for', () => lines(outcomeFile).length === round + 1);
    process.kill(first.transport.pid as number, 'SIGKILL');
    await first.client.close().catch(() => {});

    const second = await startServer(false);
    let retry: CallToolResult;
    for (;;) {
      tally.retries++;
      retry = (await second.client.callTool({ name: 'provision', arguments: { host } })) as CallToolResult;
      if (idemCodeOf(retry) !== 'IDEM_IN_FLIGHT') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const code = idemCodeOf(retry);
    if (code === 'IDEM_OUTCOME_UNKNOWN') tally.unknown++;
    else if (!retry.isError) tally.falseSuccess++;
    else tally.other++;
    await second.client.close();
    const ran = lines(counterFile).filter((line) => line.endsWith(` ${host}`)).length;
    if (ran !== 1) tally.duplicated += ran - 1;
    process.stdout.write(
      `round ${round + 1}/${rounds}: answered ${tally.answered} unknown ${tally.unknown} false_success ${tally.falseSuccess} other ${tally.other} duplicated ${tally.duplicated}\n`,
    );
  }
} finally {
  removeTemporaries();
}
const wall = ((performance.now() - started) / 1000).toFixed(0);
console.log(
  `kills: ${rounds}, answered with the result: ${tally.answered}, retries answered unknown: ${tally.unknown}, ` +
    `false successes: ${tally.falseSuccess}, other answers: ${tally.other}, duplicated: ${tally.duplicated}, ` +
    `retry calls (in flight until the lease lapsed): ${tally.retries}, wall ${wall} s`,
);
const ok =
  tally.answered === rounds &&
  tally.unknown === rounds &&
  tally.falseSuccess + tally.other + tally.duplicated === 0;
process.exit(ok ? 0 : 1);
