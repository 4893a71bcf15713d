#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { CommanderError } from 'commander';
import { messageOf } from '../errors.js';
import { EXIT, exitCodeOf } from './exit-codes.js';
import { buildProgram } from './program.js';

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

// Commander's usage errors are thrown to the end of this file, to exit 2 (its default is 1).
const program = buildProgram(version, (error) => {
  saidByCommander.add(error);
  throw error;
});

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
