import picomatch from 'picomatch';
import type { ReplayClass } from '../../contracts/contract.js';
import { ConfigError } from '../../errors.js';
import type { GatewayToolContractConfig } from '../config/config.js';
import type { ToolNameEntry } from './tool-names.js';

const REPLAYS: readonly ReplayClass[] = ['read_only', 'review', 'keyed', 'status'];

interface Override {
  /** The flag as given, for what is said about it (`--tool wirte_file=read_only`). */
  flag: string;
  pattern: string;
  matches(name: string): boolean;
  replay: ReplayClass;
}

/**
 * Contracts given on the command line (`idem gateway --read-only 'get_*,list_*'
 * --tool NAME=review -- <command>`), so zero-config use can be tuned without
 * writing a file. A pattern is a glob matched against the name the client
 * sees and the name the upstream knows (`get_*` matches `github__get_issue`
 * when names are prefixed). A flag wins
 * over the config: it sets `replay` and keeps the rest of a `tools:` entry of
 * the same name (its scope, window, status probe). Among flags, `--tool` wins
 * over `--read-only`, and a later `--tool` over an earlier one.
 */
export class ToolOverrides {
  readonly #overrides: Override[];
  readonly #contracts: Record<string, GatewayToolContractConfig>;

  private constructor(overrides: Override[], contracts: Record<string, GatewayToolContractConfig>) {
    this.#overrides = overrides;
    this.#contracts = contracts;
  }

  /**
   * @param readOnly values of `--read-only` (each comma-separated globs)
   * @param tools values of `--tool` (NAME=replay, NAME a glob)
   * @param contracts the config's `tools:`, which the flags are laid over
   */
  static parse(
    readOnly: readonly string[],
    tools: readonly string[],
    contracts: Record<string, GatewayToolContractConfig> = {},
  ): ToolOverrides {
    const overrides: Override[] = [];
    for (const pattern of readOnly.flatMap((value) => value.split(',')).map((p) => p.trim())) {
      if (pattern === '') continue;
      overrides.push({
        flag: `--read-only ${pattern}`,
        pattern,
        matches: picomatch(pattern),
        replay: 'read_only',
      });
    }
    for (const value of tools) {
      const at = value.lastIndexOf('=');
      const pattern = value.slice(0, at).trim();
      const replay = value.slice(at + 1).trim() as ReplayClass;
      if (at <= 0 || pattern === '' || !REPLAYS.includes(replay))
        throw new ConfigError(
          `--tool ${value}: expected NAME=${REPLAYS.join('|')}, e.g. --tool get_time=read_only or --tool 'create_*=review'`,
        );
      if (replay === 'status' && !contracts[pattern]?.status_probe)
        throw new ConfigError(
          `--tool ${value}: replay: status needs a status probe; declare tools.${pattern}.status_probe in a --config file (the flag then only sets replay)`,
        );
      overrides.push({ flag: `--tool ${value}`, pattern, matches: picomatch(pattern), replay });
    }
    return new ToolOverrides(overrides, contracts);
  }

  /**
   * Each pattern as the tool-name check sees it (tool-names.ts): like a config entry, one that
   * matches no published tool stops the gateway at start-up, with the nearest name.
   */
  nameEntries(): ToolNameEntry[] {
    return this.#overrides.map((override) => ({
      where: override.flag,
      key: override.pattern,
      security: false,
      matches: (tool) => override.matches(tool.name) || override.matches(tool.upstreamName),
    }));
  }

  get empty(): boolean {
    return this.#overrides.length === 0;
  }

  /** The contract a tool gets: the last matching flag laid over its config entry; no flag matches: the config's. */
  contractFor(name: string, upstreamName: string = name): GatewayToolContractConfig | undefined {
    return this.over(name, upstreamName, this.#contracts[name]);
  }

  /** The last flag matching the tool laid over `declared` (its config entry, however it was named); none: `declared`. */
  over(
    name: string,
    upstreamName: string,
    declared: GatewayToolContractConfig | undefined,
  ): GatewayToolContractConfig | undefined {
    const flag = this.#overrides.findLast(
      (override) => override.matches(name) || override.matches(upstreamName),
    );
    if (!flag) return declared;
    return { ...declared, replay: flag.replay };
  }
}
