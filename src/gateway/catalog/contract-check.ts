import { resolveContract, type ToolContract } from '../../contracts/contract.js';
import type { ActionTool } from '../../dispatch/channel.js';
import { ConfigError } from '../../errors.js';
import type { GatewayConfig } from '../config/config.js';
import { actionEntry, defaultsContract } from './catalog.js';

export interface ContractProblem {
  /** The config key of the contract: tools.<name>, defaults, http_tools.<name>.contract. */
  where: string;
  /** What is wrong and what to change, starting with `where`. */
  text: string;
}

/**
 * Every contract of a config, resolved once before the gateway serves
 * anything. A contract that cannot work (an approval_timeout past its attach
 * window, a business key the fingerprint ignores, a duration that is none)
 * would otherwise fail each listing of its upstream's tools, and each call
 * of them as if the upstream were down. Nothing in these checks depends on
 * what an upstream lists: a declared contract wins over annotations, so
 * checking it before any list arrives is checking it for good.
 */
export function contractProblems(
  config: GatewayConfig,
  actionTools: readonly ActionTool[],
): ContractProblem[] {
  const problems: ContractProblem[] = [];
  const check = (where: string, resolve: () => unknown) => {
    try {
      resolve();
    } catch (error) {
      problems.push({ where, text: `${where}: ${(error as Error).message}` });
    }
  };
  for (const [name, declared] of Object.entries(config.tools ?? {})) {
    // The probe is built per session; what it is given is checked by the schema.
    const { status_probe: _, ...rest } = declared;
    check(`tools.${name}`, () => resolveContract(rest as ToolContract, undefined));
  }
  if (config.defaults) check('defaults', () => resolveContract(defaultsContract(config.defaults), undefined));
  for (const action of actionTools) {
    const section = config.ssh_tools?.[action.name] ? 'ssh_tools' : 'http_tools';
    check(`${section}.${action.name}.contract`, () => actionEntry(action));
  }
  return problems;
}

/** Stops the start on a contract that cannot work, naming each tool and what to change. */
export function checkContracts(config: GatewayConfig, actionTools: readonly ActionTool[]): void {
  const problems = contractProblems(config, actionTools);
  if (problems.length > 0)
    throw new ConfigError(
      `${problems.length === 1 ? 'a contract cannot work' : `${problems.length} contracts cannot work`}:\n${problems.map((p) => `  ${p.text}`).join('\n')}`,
    );
}
