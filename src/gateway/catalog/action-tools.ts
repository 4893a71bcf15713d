import { Credentials } from '../../credentials/index.js';
import type { ActionTool } from '../../dispatch/channel.js';
import { httpActionTool } from '../../dispatch/http/index.js';
import { sshActionTool } from '../../dispatch/ssh/index.js';
import { ConfigError, CredentialError } from '../../errors.js';
import type { KnownSecrets } from '../../identity/redaction.js';
import { loadSsh2 } from '../../support/optional-packages.js';
import type { GatewayConfig } from '../config/config.js';
import { expandEnv } from '../config/env-references.js';
import { registerSecretVariables } from '../upstreams/env.js';
import { checkContracts } from './contract-check.js';

/**
 * The action tools a config declares (`http_tools:`, `ssh_tools:` on the
 * `ssh_hosts:` inventory), built and checked at start: names unique across kinds, none taken
 * by the status tool, contracts declared beside the tool (not under `tools:`).
 * A spec that cannot be made safe stops the start with a ConfigError.
 */
export function actionToolsOf(config: GatewayConfig, credentials: Credentials): ActionTool[] {
  const tools: ActionTool[] = [];
  const seen = new Map<string, string>();
  const add = (section: string, name: string, build: () => ActionTool) => {
    const where = `${section}.${name}`;
    if (name === config.status_tool)
      throw new ConfigError(`${where}: the name is the status tool's (status_tool: ${config.status_tool})`);
    const other = seen.get(name);
    if (other) throw new ConfigError(`${where}: ${other} already declares a tool of that name`);
    if (config.tools?.[name])
      throw new ConfigError(
        `tools.${name}: an action tool's contract is declared beside it, as ${where}.contract`,
      );
    seen.set(name, where);
    try {
      tools.push(build());
    } catch (error) {
      throw error instanceof ConfigError ? error : new ConfigError(`${where}: ${(error as Error).message}`);
    }
  };
  for (const [name, spec] of Object.entries(config.http_tools ?? {}))
    add('http_tools', name, () => httpActionTool(name, withFixedHeadersExpanded(spec), { credentials }));
  for (const [name, spec] of Object.entries(config.ssh_tools ?? {}))
    add('ssh_tools', name, () => sshActionTool(name, spec, config.ssh_hosts, { credentials }));
  return tools;
}

/** A spec's `fixed_headers` with each `$` + `{NAME}` taken from the environment (their values are secrets: registerSecretVariables). */
function withFixedHeadersExpanded<T extends { fixed_headers?: Record<string, string> | undefined }>(
  spec: T,
): T {
  if (!spec.fixed_headers) return spec;
  const expanded = Object.entries(spec.fixed_headers).map(([name, value]) => [name, expandEnv(value)]);
  return { ...spec, fixed_headers: Object.fromEntries(expanded) };
}

/** Closes what the tools' channels hold open (connection pools). */
export async function closeActionTools(tools: readonly ActionTool[]): Promise<void> {
  await Promise.all(tools.map((t) => t.channel.close?.().catch(() => {})));
}

/**
 * The config's action tools, checked before the store opens: a credential file others can read,
 * a tool whose URLs cannot be confined, or a contract that cannot work stops the start; so does an
 * SSH tool without ssh2 installed (an optional peer: docs/adr/0038-optional-peer-packages.md), which could only refuse
 * every call. The credentials' values join `knownSecrets` now, before any upstream is started —
 * with the other secrets the config takes from the environment (registerSecretVariables): what
 * an upstream echoes of one is scrubbed from the first call on (a credential that cannot be read
 * yet is said on the log, and joins when a call resolves it).
 */
export async function checkedActionTools(
  config: GatewayConfig,
  knownSecrets: KnownSecrets,
  logger?: { warn(message: string): void },
): Promise<ActionTool[]> {
  let credentials: Credentials;
  try {
    credentials = Credentials.fromConfig(config.credentials, knownSecrets);
  } catch (error) {
    if (error instanceof CredentialError) throw new ConfigError(error.message);
    throw error;
  }
  for (const problem of await credentials.registerAll())
    logger?.warn(`${problem}; the calls that use it are denied until it can be read`);
  registerSecretVariables(config, knownSecrets);
  const actionTools = actionToolsOf(config, credentials);
  checkContracts(config, actionTools);
  if (Object.keys(config.ssh_tools ?? {}).length > 0) await loadSsh2();
  return actionTools;
}
