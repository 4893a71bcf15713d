import type { Command } from 'commander';
import { messageOf } from '../errors.js';
import { loadConfig } from '../gateway/config/index.js';
import { CHECK_EXIT, CommandExit } from './exit-codes.js';
import { printJson } from './format.js';

export function registerLintCommand(program: Command, version: string): void {
  program
    .command('lint')
    .description(
      'List every tool whose upstream annotations the contracts contradict (e.g. readOnlyHint: true under an effectful contract, with the line that settles it), every tool with neither annotations nor a contract (with the config line that settles it), and for action tools (http_tools, ssh_tools): a missing contract, a credential that cannot be resolved now, an upstream tool one hides; exit 0 if none, 1 if any, 2 if it could not check',
    )
    .requiredOption('-c, --config <file>', 'the gateway config')
    .option('--json', 'machine-readable')
    .action(async (flags: { config: string; json?: boolean }) => {
      // Loaded on use: lint reaches the upstreams, whose module graph the other commands do not need.
      const { lintGateway } = await import('../gateway/lint.js');
      // A check that could not check exits 2, never 1: 1 would read as "findings" to a script.
      const findings = await lintGateway(loadConfig(flags.config), version).catch((error: unknown) => {
        throw new CommandExit(
          `lint could not check ${flags.config}: ${messageOf(error)}`,
          CHECK_EXIT.couldNotCheck,
        );
      });
      // Lines said for the record (an imported tool with a declared contract) are listed, never counted.
      const problems = findings.filter((f) => !f.info);
      if (flags.json) printJson(findings);
      else {
        for (const f of findings)
          process.stdout.write(
            f.message.startsWith(`${f.tool}: `) ? `${f.message}\n` : `${f.tool}: ${f.message}\n`,
          );
        if (problems.length === 0)
          process.stdout.write(
            "OK: no contract contradicts an upstream's annotations, and every tool has one or the other.\n",
          );
      }
      process.exitCode = problems.length === 0 ? CHECK_EXIT.clean : CHECK_EXIT.found;
    });
}
