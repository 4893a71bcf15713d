#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { messageOf } from '../errors.js';
import { registerApprovalCommands } from './approvals.js';
import { registerAuditCommands } from './audit.js';
import { registerConsoleCommand } from './console.js';
import { registerExecutionCommands } from './executions.js';
import { EXIT, exitCodeOf } from './exit-codes.js';
import { registerGatewayCommand } from './gateway.js';
import { registerInitCommand } from './init.js';
import { registerLintCommand } from './lint.js';
import { registerSessionCommands } from './sessions.js';
import { registerStoreCommands } from './store.js';
import { registerSweepCommand } from './sweep.js';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

// `idem executions list | head`: a closed pipe is the reader being done, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

/** Errors commander has already printed (a usage error, or the help or version asked for). */
const saidByCommander = new WeakSet<CommanderError>();

const program = new Command('idem')
  .description('Execution identity for MCP tool calls: one intended action, one execution.')
  .version(version)
  .enablePositionalOptions()
  // Commander's usage errors are thrown to the end of this file, to exit 2 (its default is 1).
  // Set before any command is added: subcommands copy it when they are created.
  .exitOverride((error) => {
    saidByCommander.add(error);
    throw error;
  })
  .showHelpAfterError('(add --help for usage)');

program
  .command('demo')
  .description(
    'Run the charge_card demo through idem gateway on the embedded SQLite store, then the SSH action tool scenarios at a throwaway loopback sshd (skipped, said in one line, without openssh-server); exits 0 only if every count is right',
  )
  .option('--data-dir <dir>', 'data directory (default: IDEM_DATA_DIR, else a fresh temporary directory)')
  .option(
    '--library',
    'the agent talks to the example server directly (Idem inside it) instead of through idem gateway',
  )
  .action(async (options: { dataDir?: string; library?: boolean }) => {
    // Loaded on use: the demo's module graph (gateway, SSH, HTTP) is the heaviest of all commands.
    const { runDemo } = await import('../demo/demo.js');
    const reports = await runDemo({
      ...(options.dataDir ? { dataDir: options.dataDir } : {}),
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

try {
  await program.parseAsync(process.argv);
} catch (error) {
  const said = error instanceof CommanderError && saidByCommander.has(error);
  const code = said ? (error.exitCode === 0 ? EXIT.ok : EXIT.usage) : exitCodeOf(error);
  if (!said) process.stderr.write(`idem: ${messageOf(error)}\n`);
  // A failed command ends here, whatever it had started (a server, a child process, a timer):
  // left to the event loop, one listening socket keeps a script waiting on `idem` forever.
  await flushed(process.stdout);
  await flushed(process.stderr);
  process.exit(code);
}

/** Resolves once what was written to the stream before has been handed to the OS. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || stream.writableEnded) resolve();
    else stream.write('', () => resolve());
  });
}
