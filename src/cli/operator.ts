import { userInfo } from 'node:os';
import { type Command, Option } from 'commander';

/** Who an operator command acts as (docs/adr/0032): `--operator`, else `--by`, its old spelling. */
export interface OperatorFlags {
  operator?: string;
  by?: string;
}

/**
 * `--operator <name>`: who an operator command acts as, journaled with what it does. Declared here
 * once for every such command. `--by`, the spelling `idem executions resolve` had, still works
 * and is hidden from the help; giving both is a usage error.
 */
export function operatorOption(command: Command): Command {
  return command
    .option('--operator <name>', 'who you are, for the journal (default: operator:<your OS user>)')
    .addOption(new Option('--by <name>', 'the old spelling of --operator').hideHelp().conflicts('operator'));
}

/** The operator the flags name, else `operator:<OS user>`. */
export function operatorOf(flags: OperatorFlags): string {
  return flags.operator ?? flags.by ?? `operator:${userInfo().username}`;
}
