import { existsSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { messageOf } from '../errors.js';
import { commandUpstreamName } from './command-upstream.js';
import { CommandExit, EXIT } from './exit-codes.js';

interface InitFlags {
  output: string;
  force?: boolean;
}

/** `idem init [--output idem.yaml] [--force] -- <command> [args…]` */
export function registerInitCommand(program: Command, version: string): void {
  program
    .command('init')
    .description(
      'Start an MCP server, list its tools, and write a commented gateway config with a suggested contract per tool (each a guess to confirm)',
    )
    .option('-o, --output <file>', 'where to write the config', 'idem.yaml')
    .option('--force', 'overwrite the file if it exists')
    .argument('<command...>', 'the stdio MCP server command, after --')
    .passThroughOptions()
    .action(async (command: string[], flags: InitFlags) => {
      // Checked before the server starts: a refusal costs nothing.
      if (existsSync(flags.output) && !flags.force)
        throw new CommandExit(
          `${flags.output} exists; give --force to overwrite it, or --output another file`,
          EXIT.failed,
        );
      const [cmd, ...args] = command as [string, ...string[]];
      // Loaded on use: the SDK client and the guesses are only this command's.
      const [{ listServerTools }, { draftConfig }] = await Promise.all([
        import('./list-server-tools.js'),
        import('../gateway/config-draft.js'),
      ]);
      const tools = await listServerTools(cmd, args, version).catch((error: unknown) => {
        throw new CommandExit(`could not list the tools of ${cmd}: ${messageOf(error)}`, EXIT.failed);
      });
      const text = draftConfig({ name: commandUpstreamName(cmd), command: cmd, args }, tools);
      writeFileSync(flags.output, text, { flag: flags.force ? 'w' : 'wx' });
      process.stdout.write(
        `wrote ${flags.output}: ${tools.length} tool${tools.length === 1 ? '' : 's'}, each with a guessed contract to confirm. Then: idem lint --config ${flags.output}; idem gateway --config ${flags.output}\n`,
      );
    });
}
