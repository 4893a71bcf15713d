import { existsSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { messageOf } from '../errors.js';
import { CommandExit, EXIT } from './exit-codes.js';
import { commandUpstreamName } from './upstream-name.js';

interface InitFlags {
  output: string;
  force?: boolean;
  openapi?: string;
  server?: string;
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
    .option(
      '--openapi <file>',
      "instead of a server: an OpenAPI document (file or URL) whose operations become HTTP tools, each with the document's suggested contract as a comment",
    )
    .option('--server <url>', "with --openapi: the base URL instead of the document's servers")
    .argument('[command...]', 'the stdio MCP server command, after --')
    .passThroughOptions()
    .action(async (command: string[], flags: InitFlags) => {
      // Checked before the server starts: a refusal costs nothing.
      if (existsSync(flags.output) && !flags.force)
        throw new CommandExit(
          `${flags.output} exists; give --force to overwrite it, or --output another file`,
          EXIT.failed,
        );
      if (flags.openapi) {
        if (command.length > 0)
          throw new CommandExit('give either --openapi <file> or a command after --, not both', EXIT.usage);
        await initFromOpenApi(flags.openapi, flags);
        return;
      }
      if (command.length === 0)
        throw new CommandExit('give the MCP server command after --, or --openapi <file>', EXIT.usage);
      const [cmd, ...args] = command as [string, ...string[]];
      // Loaded on use: the SDK client and the guesses are only this command's.
      const [{ listServerTools }, { draftConfig }] = await Promise.all([
        import('./list-server-tools.js'),
        import('../gateway/config/index.js'),
      ]);
      const tools = await listServerTools(cmd, args, version).catch((error: unknown) => {
        throw new CommandExit(`could not list the tools of ${cmd}: ${messageOf(error)}`, EXIT.failed);
      });
      const text = draftConfig({ name: commandUpstreamName(cmd, args), command: cmd, args }, tools);
      writeFileSync(flags.output, text, { flag: flags.force ? 'w' : 'wx' });
      process.stdout.write(
        `wrote ${flags.output}: ${tools.length} tool${tools.length === 1 ? '' : 's'}, each with a guessed contract to confirm. Then: idem lint --config ${flags.output}; idem gateway --config ${flags.output}\n`,
      );
    });
}

/** `idem init --openapi <file>`: the document imported as the gateway would, written as a config to confirm. */
async function initFromOpenApi(source: string, flags: InitFlags): Promise<void> {
  const [{ GatewayConfigSchema }, { importHttpTools, LARGE_IMPORT, openApiDraft }] = await Promise.all([
    import('../gateway/config/index.js'),
    import('../gateway/openapi/index.js'),
  ]);
  const isUrl = /^https?:\/\//i.test(source);
  const config = GatewayConfigSchema.parse({
    http_tools_from: [
      { openapi: isUrl ? source : resolve(source), ...(flags.server ? { server: flags.server } : {}) },
    ],
  });
  const { imports } = await importHttpTools(config).catch((error: unknown) => {
    throw new CommandExit(`could not import ${source}: ${messageOf(error)}`, EXIT.failed);
  });
  const imported = imports[0] as NonNullable<(typeof imports)[0]>;
  // The written path is relative to the config file, as the gateway reads it.
  const openapi = isUrl ? source : relative(dirname(resolve(flags.output)), resolve(source)) || source;
  const text = openApiDraft(
    { openapi, ...(flags.server ? { server: flags.server } : {}), documentServer: imported.server },
    imported,
  );
  writeFileSync(flags.output, text, { flag: flags.force ? 'w' : 'wx' });
  if (imported.tools.length > LARGE_IMPORT)
    process.stderr.write(
      `idem init: ${imported.tools.length} operations is a lot for an agent (each is in every tools/list, and compiled at start): select the ones it needs with include: — ${flags.output} lists the document's tags to choose from\n`,
    );
  process.stdout.write(
    `wrote ${flags.output}: ${imported.tools.length} operation${imported.tools.length === 1 ? '' : 's'} as HTTP tools, each with a suggested contract to confirm, ${imported.skipped.length} skipped (listed in the file). Then: idem lint --config ${flags.output}; idem gateway --config ${flags.output}\n`,
  );
}
