/** docs/reference/cli.md: commander's help of every command and subcommand of `idem`. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import { generatedHeading } from './markdown.js';

/** Wide enough for the option column and a description beside it; fixed, so the page is the same on every terminal. */
const HELP_WIDTH = 100;

function fullName(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

function allCommands(command: Command): Command[] {
  return [command, ...command.commands.flatMap(allCommands)];
}

export function cliPage(): string {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  const program = buildProgram(version, (error) => {
    throw error;
  });
  const commands = allCommands(program).filter((command) => !command.name().startsWith('help'));
  const sections = commands.map((command) => {
    command.configureOutput({ getOutHelpWidth: () => HELP_WIDTH, getOutHasColors: () => false });
    return `## ${fullName(command)}\n\n\`\`\`text\n${command.helpInformation().trimEnd()}\n\`\`\`\n`;
  });
  return [
    generatedHeading('CLI reference', "the `idem` program's own help (`src/cli/`)"),
    'The help of every command, as `idem <command> --help` prints it. ' +
      'Exit codes ([operators](../operators.md#exit-codes)): 0 done; 1 the command ran and failed; 2 the ' +
      'command line or the config is wrong and nothing was attempted. `idem lint` and `idem audit verify`: ' +
      '1 found something, 2 could not check.\n',
    ...deprecatedSpellings(commands),
    ...sections,
  ].join('\n');
}

/**
 * The hidden options (commander's hideHelp): old spellings still read, which no help shows, said
 * here once each with the commands that take them (docs/adr/0032-cli-conventions.md).
 */
function deprecatedSpellings(commands: Command[]): string[] {
  const hidden = new Map<string, { description: string; commands: string[] }>();
  for (const command of commands) {
    for (const option of command.options.filter((o) => o.hidden)) {
      const entry = hidden.get(option.flags) ?? { description: option.description, commands: [] };
      entry.commands.push(`\`${fullName(command)}\``);
      hidden.set(option.flags, entry);
    }
  }
  if (hidden.size === 0) return [];
  const lines = [...hidden].map(
    ([flags, { description, commands: used }]) => `- \`${flags}\` (${description}): ${used.join(', ')}.`,
  );
  return [
    'Old spellings, still read and hidden from the help; each is a usage error together with the one that replaced it:\n',
    `${lines.join('\n')}\n`,
  ];
}
