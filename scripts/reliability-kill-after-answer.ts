import { parseArgs } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { idemCodeOf } from '../src/executions/answers.js';
import { linesOf } from '../test/support/fixture-server.js';
import { heldOutcomeFiles, startHeldOutcomeServer } from '../test/support/held-outcome.js';
import { freshDir, removeTemporaries } from '../test/support/temp-dirs.js';
import { waitUntil } from '../test/support/wait.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '20' } } });
const rounds = Number(values.rounds);
const dataDir = freshDir('kill-after-answer');
const files = heldOutcomeFiles(dataDir);
const { counterFile, outcomeFile } = files;

const tally = { answered: 0, unknown: 0, falseSuccess: 0, other: 0, duplicated: 0, retries: 0 };
const started = performance.now();
try {
  for (let round = 0; round < rounds; round++) {
    const host = `db-${round}`;
    const first = await startHeldOutcomeServer(files, true);
    const answer = (await first.client.callTool({
      name: 'provision',
      arguments: { host },
    })) as CallToolResult;
    if (!answer.isError && JSON.stringify(answer.content).includes(`provisioned ${host}`)) tally.answered++;
    await waitUntil('the outcome write asked for', () => linesOf(outcomeFile).length === round + 1);
    process.kill(first.transport.pid as number, 'SIGKILL');
    await first.client.close().catch(() => {});

    const second = await startHeldOutcomeServer(files, false);
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
    const ran = linesOf(counterFile).filter((line) => line.endsWith(` ${host}`)).length;
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
