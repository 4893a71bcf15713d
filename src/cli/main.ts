#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { runDemo } from '../demo/demo.js';
import { registerGatewayCommand } from './gateway.js';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const program = new Command('idem')
  .description('Execution identity for MCP tool calls: one intended action, one execution.')
  .version(version)
  .enablePositionalOptions();

program
  .command('demo')
  .description('Run the charge_card demo on the embedded SQLite store; exits 0 only if every count is right')
  .option('--data-dir <dir>', 'data directory (default: IDEM_DATA_DIR, else a fresh temporary directory)')
  .action(async (options: { dataDir?: string }) => {
    const reports = await runDemo(options.dataDir ? { dataDir: options.dataDir } : {});
    process.exitCode = reports.every((r) => r.ok) ? 0 : 1;
  });

registerGatewayCommand(program, version);

await program.parseAsync(process.argv);
