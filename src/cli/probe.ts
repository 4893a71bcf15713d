import { type Command, InvalidArgumentError } from 'commander';
import { messageOf } from '../errors.js';
import { CHECK_EXIT, CommandExit } from './exit-codes.js';
import { printJson } from './format.js';

interface ProbeFlags {
  via?: string;
  tool?: string;
  args?: string;
  count?: string;
  kill?: boolean;
  scenario?: string[];
  expect: string[];
  json?: boolean;
  verbose?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerProbeCommand(program: Command): void {
  program
    .command('probe')
    .description(
      'Run fixed retry scenarios (a lost answer resent and retried, calls at once, a client timeout, a killed process, a deliberate repeat) against an MCP gateway (--via, in front of a counting upstream the probe starts) or server (-- <command> or a URL, with --tool, --args and --count), count the effects at the far side and judge each answer; exit 0 if the totals meet --expect (default duplicates=0,falseAnswers=0), 1 if not, 2 if it could not run',
    )
    .argument('[server...]', 'server mode: the server command (after --) or its Streamable HTTP URL')
    .option(
      '--via <command>',
      'gateway mode: the shell command that starts the gateway under test, with {upstream} (the counting upstream over Streamable HTTP) or {upstream_stdio} (its command line), and {port} (a free loopback port: the gateway serves http://127.0.0.1:{port}/mcp; without it the probe speaks stdio to the command); it runs with IDEM_DATA_DIR set to a fresh directory',
    )
    .option('--tool <name>', 'server mode: the tool to call')
    .option(
      '--args <json>',
      'server mode: its arguments, {key} where the action name goes (each action has its own)',
    )
    .option(
      '--count <command>',
      'server mode: a shell command that prints how many times action {key} took effect (its last number is read)',
    )
    .option('--kill', 'also run the scenarios that kill the target, or the gateway, mid-call')
    .option('--scenario <id>', 'only this scenario (repeatable)', collect, [])
    .option(
      '--expect <totals>',
      'the most each total may be, e.g. duplicates=0,falseAnswers=0 (repeatable; keys: duplicates, falseAnswers, missing)',
      collect,
      [],
    )
    .option('--json', 'print the scorecard as one JSON object')
    .option('--verbose', "pass the gateway's stderr through")
    .action(async (server: string[], flags: ProbeFlags) => {
      const probe = await import('../probe/index.js');
      const expect = { ...probe.DEFAULT_EXPECT };
      try {
        for (const text of flags.expect) probe.parseExpect(text, expect);
      } catch (error) {
        throw new InvalidArgumentError(messageOf(error));
      }
      const known = probe.SCENARIOS.map((s) => s.id);
      for (const id of flags.scenario ?? [])
        if (!known.includes(id))
          throw new InvalidArgumentError(`--scenario ${id}: one of ${known.join(', ')}`);
      const target = await openTarget(probe, server, flags).catch((error: unknown) => {
        throw new CommandExit(`probe could not start: ${messageOf(error)}`, CHECK_EXIT.couldNotCheck);
      });
      let card: Awaited<ReturnType<typeof probe.runProbe>>;
      try {
        card = await probe.runProbe(target, {
          kill: flags.kill ?? false,
          ...(flags.scenario?.length ? { only: flags.scenario } : {}),
          onScenario: (s) => {
            if (!flags.json)
              process.stderr.write(
                `${s.id}: ${s.skipped ? 'skipped' : `${s.countedEffects}/${s.expectedEffects}`} (${s.ms} ms)\n`,
              );
          },
        });
      } catch (error) {
        throw new CommandExit(`probe could not finish: ${messageOf(error)}`, CHECK_EXIT.couldNotCheck);
      } finally {
        await target.close();
      }
      const { exitCode, failures } = probe.verdict(card, expect);
      if (flags.json) printJson(card);
      else {
        process.stdout.write(`${probe.formatScorecard(card)}\n`);
        process.stdout.write(failures.length === 0 ? 'OK\n' : `FAILED: ${failures.join('; ')}\n`);
      }
      process.exitCode = exitCode === 0 ? CHECK_EXIT.clean : CHECK_EXIT.found;
    });
}

async function openTarget(probe: typeof import('../probe/index.js'), server: string[], flags: ProbeFlags) {
  if (flags.via) {
    if (server.length > 0) throw new InvalidArgumentError('--via probes a gateway: give no server as well');
    return probe.openGatewayTarget({
      via: flags.via,
      ...(flags.verbose ? { stderr: (chunk: string) => process.stderr.write(chunk) } : {}),
    });
  }
  const [first, ...rest] = server;
  if (!first)
    throw new InvalidArgumentError('give --via "<gateway command>" or a server: -- <command> or a URL');
  if (!flags.tool || !flags.args || !flags.count)
    throw new InvalidArgumentError('server mode needs --tool, --args and --count');
  return probe.openServerTarget({
    server: /^https?:\/\//.test(first) ? { url: first } : { command: first, args: rest },
    tool: flags.tool,
    args: flags.args,
    count: flags.count,
  });
}
