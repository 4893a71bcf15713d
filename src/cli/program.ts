import { Command, type CommanderError } from 'commander';
import { registerApprovalCommands } from './approvals.js';
import { registerAuditCommands } from './audit.js';
import { registerConsoleCommand } from './console.js';
import { registerExecutionCommands } from './executions.js';
import { registerGatewayCommand } from './gateway.js';
import { registerInitCommand } from './init.js';
import { registerLintCommand } from './lint.js';
import { registerProbeCommand } from './probe.js';
import { registerSessionCommands } from './sessions.js';
import { registerStoreCommands } from './store.js';
import { registerSweepCommand } from './sweep.js';

/**
 * The `idem` program with every command, built without parsing anything: main.ts runs it, and
 * `npm run docs` reads its help (docs/reference/cli.md) without starting a process.
 * `onCommanderError` sees commander's own errors (a usage error, the help or version asked for),
 * which it has already printed, and must throw.
 */
export function buildProgram(version: string, onCommanderError: (error: CommanderError) => never): Command {
  const program = new Command('idem')
    .description('Execution identity for MCP tool calls: one intended action, one execution.')
    .version(version)
    .enablePositionalOptions()
    // Set before any command is added: subcommands copy it when they are created.
    .exitOverride(onCommanderError)
    .showHelpAfterError('(add --help for usage)');

  program
    .command('demo')
    .description(
      'Run the charge_card demo through idem gateway on the embedded SQLite store, then the SSH action tool scenarios at a throwaway loopback sshd (skipped, said in one line, without openssh-server); exits 0 only if every count is right',
    )
    .option(
      '--data-dir <dir>',
      'data directory, kept (default: IDEM_DATA_DIR, else a fresh temporary directory, removed at the end)',
    )
    .option('--keep', 'keep the temporary data directory (its path is printed) to look at the executions')
    .option(
      '--library',
      'the agent talks to the example server directly (Idem inside it) instead of through idem gateway',
    )
    .action(async (options: { dataDir?: string; library?: boolean; keep?: boolean }) => {
      // Loaded on use: the demo's module graph (gateway, SSH, HTTP) is the heaviest of all commands.
      const { runDemo } = await import('../demo/demo.js');
      const reports = await runDemo({
        ...(options.dataDir ? { dataDir: options.dataDir } : {}),
        ...(options.keep ? { keep: true } : {}),
        via: options.library ? 'library' : 'gateway',
      });
      process.exitCode = [...reports.charges, ...reports.ssh].every((r) => r.ok) ? 0 : 1;
    });

  registerGatewayCommand(program, version);
  registerLintCommand(program, version);
  registerInitCommand(program, version);
  registerExecutionCommands(program);
  registerApprovalCommands(program);
  registerSessionCommands(program);
  registerAuditCommands(program);
  registerSweepCommand(program);
  registerStoreCommands(program);
  registerConsoleCommand(program);
  registerProbeCommand(program);
  return program;
}
