/**
 * The gateway's world for the community-server rows: a real `idem gateway`
 * process (the compiled CLI, as users run it) on loopback HTTP, in front of
 * the published @modelcontextprotocol/server-filesystem (one temporary
 * allowed directory) or @modelcontextprotocol/server-memory (a temporary
 * MEMORY_FILE_PATH), with a fresh data directory. The rule is the gateway's
 * config: a `tools:` contract for each of the server's tools with effects;
 * under `default`, no config at all (`idem gateway -- <server command>`).
 *
 * The world is read afterwards where it lives: the files, the graph's file.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type GatewayProcess, startGatewayCli } from '../gateway-process.js';
import { IDEM_CLI } from '../idem-cli.js';
import { packageBin } from '../node22.js';
import type { StdioCommand } from './agent.js';
import type { RuleAsBuilt } from './rules.js';

export type ServerKind = 'filesystem' | 'memory';

interface ServerSpec {
  bin: string;
  /** The tools the server marks with effects (readOnlyHint: false): each gets the rule's contract. */
  effectTools: string[];
}

const SERVERS: Record<ServerKind, ServerSpec> = {
  filesystem: {
    bin: packageBin('@modelcontextprotocol/server-filesystem', 'mcp-server-filesystem'),
    effectTools: ['write_file', 'edit_file', 'create_directory', 'move_file'],
  },
  memory: {
    bin: packageBin('@modelcontextprotocol/server-memory', 'mcp-server-memory'),
    effectTools: [
      'create_entities',
      'create_relations',
      'add_observations',
      'delete_entities',
      'delete_observations',
      'delete_relations',
    ],
  },
};

export interface GatewayWorld {
  kind: ServerKind;
  /** The HTTP front's URL ('' on stdio: each agent starts its own gateway, `stdio`). */
  url: string;
  /** The gateway on stdio, as a desktop client starts it: one process per agent session, one data directory. */
  stdio: StdioCommand;
  /** filesystem: the allowed directory the scenarios work in. */
  root: string;
  /** memory: the server's graph file (JSON lines). */
  memoryFile: string;
  /** The gateway process of the HTTP front (undefined on stdio). */
  gateway: GatewayProcess | undefined;
  close(): Promise<void>;
}

/**
 * The world of one cell. `front: 'http'` starts one gateway process that every agent connects to;
 * `front: 'stdio'` starts none: each agent session starts `idem gateway` on stdio itself (the
 * README's pattern for a desktop client), all on the one data directory.
 */
export async function openGatewayWorld(
  kind: ServerKind,
  rule: RuleAsBuilt,
  front: 'http' | 'stdio' = 'http',
): Promise<GatewayWorld> {
  const dir = mkdtempSync(join(tmpdir(), `idem-honesty-${kind}-`));
  const root = join(dir, 'root');
  const dataDir = join(dir, 'data');
  const memoryFile = join(dir, 'memory.jsonl');
  for (const d of [root, dataDir]) mkdirSync(d);
  const spec = SERVERS[kind];
  const serverArgs = kind === 'filesystem' ? [spec.bin, root] : [spec.bin];
  const listen = front === 'http' ? ['--listen', '127.0.0.1:0'] : [];
  let args: string[];
  if (rule.contract === undefined) {
    // What a user who declares nothing runs: the README's zero-config pattern.
    args = [...listen, '--', process.execPath, ...serverArgs];
  } else {
    const configPath = join(dir, 'idem.yaml');
    const config = {
      upstreams: { [kind]: { command: process.execPath, args: serverArgs } },
      tools: Object.fromEntries(spec.effectTools.map((tool) => [tool, rule.contract])),
    };
    writeFileSync(configPath, JSON.stringify(config, null, 2)); // JSON is YAML
    args = ['--config', configPath, ...listen];
  }
  // The stdio upstream inherits the gateway's environment (the memory server reads its file from it).
  const env = { IDEM_DATA_DIR: dataDir, ...(kind === 'memory' ? { MEMORY_FILE_PATH: memoryFile } : {}) };
  const stdio: StdioCommand = {
    command: process.execPath,
    args: [IDEM_CLI, 'gateway', ...args],
    env: { ...definedEnv(), ...env },
  };
  const gateway = front === 'http' ? await startGatewayCli(args, { env }) : undefined;
  return {
    kind,
    url: gateway?.url ?? '',
    stdio,
    root,
    memoryFile,
    gateway,
    close: async () => {
      await gateway?.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** This process's environment without unset entries (a child's `env` takes strings only). */
function definedEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

/** The entity names in server-memory's graph file (empty when it has none yet). */
export function entityNames(world: GatewayWorld): string[] {
  let text: string;
  try {
    text = readFileSync(world.memoryFile, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { type: string; name?: string })
    .filter((item) => item.type === 'entity')
    .map((item) => item.name as string);
}
