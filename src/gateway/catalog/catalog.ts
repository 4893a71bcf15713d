import type { Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { honestAnnotations } from '../../contracts/annotations.js';
import {
  type ResolvedContract,
  resolveContract,
  type StatusProbe,
  type ToolContract,
} from '../../contracts/contract.js';
import { nameSaysReadOnly } from '../../contracts/guess.js';
import { actionContract } from '../../dispatch/action-call.js';
import type { ActionTool } from '../../dispatch/channel.js';
import { STATUS_TOOL_DESCRIPTION } from '../../executions/answers.js';
import { secretPathsFromSchema } from '../../identity/arguments.js';
import type { GatewayDefaultsConfig, GatewayToolContractConfig } from '../config/config.js';
import { inputValidators } from './input-validators.js';
import { keyNames, type NamedTool } from './tool-names.js';
import type { ToolOverrides } from './tool-overrides.js';

/**
 * Where an entry's contract comes from: a contract under `tools`, the
 * upstream's annotations, the config's `defaults:` (tools with neither), or —
 * with none of these — the cautious default (`review`, scope actor, 15-minute
 * window), which the gateway names at start-up and `idem lint` lists.
 */
export type ContractSource = 'declared' | 'annotations' | 'defaults' | 'cautious_default';

/** One tool as the gateway serves it. */
export interface CatalogEntry {
  /** The name the client sees (prefixed with the upstream's name when there are several). */
  name: string;
  /** The upstream that lists it; '' for an action tool. */
  upstream: string;
  /** An action tool (HTTP, SSH) the gateway performs itself, through this channel. */
  action?: ActionTool;
  /** The name the upstream knows it by. */
  upstreamName: string;
  /** The upstream's definition. */
  tool: Tool;
  contract: ResolvedContract;
  source: ContractSource;
  /** Validates and fills in defaults (mutates its argument); undefined if the schema cannot be compiled. */
  validate: ValidateFunction | undefined;
}

/**
 * Whether the upstream said anything about the tool's effects. A title, or
 * `openWorldHint` alone, says nothing about whether a call changes anything.
 */
export function hasEffectHints(annotations: ToolAnnotations | undefined): boolean {
  return (
    annotations?.readOnlyHint !== undefined ||
    annotations?.destructiveHint !== undefined ||
    annotations?.idempotentHint !== undefined
  );
}

/** The config line that settles a tool that has neither annotations nor a contract (for a tool that only reads). */
export function settlingLine(name: string): string {
  const key = /^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name) ? name : JSON.stringify(name);
  return `tools: { ${key}: { replay: read_only } }`;
}

/**
 * Tools on the cautious default, as the gateway names them once at start-up
 * (one line). The example of a tool that only reads is one whose name says so
 * (get_…, list_…, no write verb): an example taken blindly (the first tool,
 * say `create_or_update_file`) would teach the user to remove the protection
 * from a write. None such: a placeholder the user fills in.
 */
export function cautiousDefaultNotice(names: readonly string[]): string {
  const reader = names.find(nameSaysReadOnly);
  const example = reader
    ? settlingLine(reader)
    : 'tools: { <a tool that only reads>: { replay: read_only } }';
  return (
    `${names.length} tool${names.length === 1 ? ' has' : 's have'} neither annotations nor a contract, so ${names.length === 1 ? 'it is' : 'they are'} treated as having effects ` +
    `(replay: review, 15-minute attach window: an identical call within it gets the stored result, marked as a replay): ${names.join(', ')}. ` +
    `To settle one that only reads: ${example} (or idem gateway --read-only 'get_*,list_*' -- …); if none of them writes: defaults: { replay: read_only }. \`idem init\` suggests a contract per tool; \`idem lint\` lists them.`
  );
}

/**
 * Names the tools on the cautious default, each once per process. "Start-up"
 * is the first time the catalog learns a tool (the first tools/list of the
 * first session: upstreams start with a session): tools with neither
 * annotations nor a contract are named then, so that whoever runs the gateway
 * sees which calls will be replayed.
 */
export class CautiousDefaultNotices {
  readonly #named = new Set<string>();
  readonly #warn: (message: string) => void;

  constructor(warn: (message: string) => void) {
    this.#warn = warn;
  }

  listed(entries: readonly CatalogEntry[]): void {
    const fresh = entries
      // An action tool's contract is declared beside it, not under tools: (the notice's advice); lint names those.
      .filter((e) => e.source === 'cautious_default' && !e.action && !this.#named.has(e.name))
      .map((e) => e.name);
    if (fresh.length === 0) return;
    for (const name of fresh) this.#named.add(name);
    this.#warn(cautiousDefaultNotice(fresh));
  }
}

/** The annotations published for an entry: the one rule in contracts/annotations.ts. */
export function publishedAnnotations(entry: CatalogEntry): ToolAnnotations | undefined {
  return honestAnnotations(entry.tool.annotations, entry.contract);
}

/** What MCP reads for a hint a tool leaves out (an absent `idempotentHint` means false). */
const HINT_DEFAULTS = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
} as const;

/** A disagreement between what a tool says of itself and what Idem does with it, for `idem lint`. */
export interface AnnotationMismatch {
  message: string;
  /** The config line that settles it, where one does. */
  settle?: string;
}

/**
 * Where an upstream's annotations and the contracts disagree (for `idem lint`), at most once per
 * tool. A hint published otherwise than the upstream gives it (publishedAnnotations, the rule the
 * gateway publishes by, each hint read with MCP's default when absent) is one: an upstream
 * `readOnlyHint: true` under an effectful contract, settled by `replay: read_only` if the upstream
 * is right. A read_only contract the upstream does not confirm is the other (published as given,
 * but Idem then deduplicates nothing).
 */
export function annotationMismatches(entry: CatalogEntry): AnnotationMismatch[] {
  const given = entry.tool.annotations ?? {};
  const published = publishedAnnotations(entry) ?? {};
  const changed = (Object.keys(HINT_DEFAULTS) as (keyof typeof HINT_DEFAULTS)[]).filter(
    (hint) => (given[hint] ?? HINT_DEFAULTS[hint]) !== (published[hint] ?? HINT_DEFAULTS[hint]),
  );
  if (changed.length > 0) {
    const says = changed.map((hint) => `${hint}: ${given[hint] ?? HINT_DEFAULTS[hint]}`).join(', ');
    const shown = changed.map((hint) => `${hint}: ${published[hint] ?? HINT_DEFAULTS[hint]}`).join(', ');
    return [
      {
        message: `${entry.name}: the upstream says ${says}, but the contract declares replay: ${entry.contract.replay}, so it is published ${shown}. If the upstream is right: ${settlingLine(entry.name)}`,
        settle: settlingLine(entry.name),
      },
    ];
  }
  // An upstream that says nothing does not disagree: declaring read_only is how such a tool is settled.
  if (
    hasEffectHints(entry.tool.annotations) &&
    given.readOnlyHint !== true &&
    entry.contract.replay === 'read_only' &&
    given.destructiveHint !== false
  ) {
    return [
      {
        message: `${entry.name}: the contract says read_only, but the upstream does not mark the tool readOnlyHint: true`,
      },
    ];
  }
  return [];
}

export interface CatalogOptions {
  /** Declared contracts by gateway-visible name. */
  contracts: Record<string, GatewayToolContractConfig>;
  /** Contracts given as flags (`--read-only`, `--tool`): they win over `contracts`. */
  overrides?: ToolOverrides | undefined;
  /** The contract of tools with neither annotations nor a declared contract (config `defaults:`). */
  defaults?: GatewayDefaultsConfig | undefined;
  /** Whether names are prefixed with the upstream name. */
  prefixed: boolean;
  separator: string;
  /** Builds the function that runs a declarative status probe for `name`. */
  probeFor(name: string, probe: NonNullable<GatewayToolContractConfig['status_probe']>): StatusProbe;
  /** Told of every tool listed, e.g. so the receipt layer can leave read-only tools alone. */
  onAdd?(entries: CatalogEntry[]): void;
  /** Told when an upstream's tools were (re)listed, after onAdd: the config's tool names are checked then. */
  onListed?(upstream: string, catalog: ToolCatalog): void;
  /**
   * Tools the gateway performs itself (config `http_tools:`…). Never prefixed; an upstream tool
   * whose visible name is one of theirs is not listed (the config's tool wins, and `idem lint` says so).
   */
  actionTools?: readonly ActionTool[];
  /** The gateway's status tool: an upstream's own (one built with the Idem library) is not listed. */
  statusTool?: string;
}

/**
 * An upstream's own status tool: the gateway's status tool name, or the Idem
 * library's status tool under any name (its description says what it is). It
 * answers for the upstream's executions, which no gateway answer refers to, so
 * an agent shown it beside the gateway's would have two tools for one question
 * and pick the one that does not know its refs.
 */
export function isUpstreamStatusTool(tool: Tool, statusTool: string | undefined): boolean {
  return tool.name === statusTool || tool.description === STATUS_TOOL_DESCRIPTION;
}

/** The tools of one session's upstreams, by the name the client sees. */
export class ToolCatalog {
  readonly #entries = new Map<string, CatalogEntry>();
  /** The upstreams whose tools are known (listed, and not cleared since). */
  readonly #listed = new Set<string>();

  constructor(readonly options: CatalogOptions) {
    const actions = (options.actionTools ?? []).map((action) => actionEntry(action));
    for (const entry of actions) this.#entries.set(entry.name, entry);
    if (actions.length > 0) options.onAdd?.(actions);
  }

  /** Whether an upstream tool of this visible name is hidden by an action tool of the same name. */
  shadowedByAction(name: string): boolean {
    return this.#entries.get(name)?.action !== undefined;
  }

  /** The action tools, in config order. */
  actionEntries(): CatalogEntry[] {
    return [...this.#entries.values()].filter((entry) => entry.action);
  }

  visibleName(upstream: string, upstreamName: string): string {
    return this.options.prefixed ? `${upstream}${this.options.separator}${upstreamName}` : upstreamName;
  }

  /**
   * Records tools listed by an upstream; returns their entries in order.
   * `more`: another page of this upstream's list is still to come, so its list is not known yet.
   */
  add(upstream: string, tools: Tool[], more = false): CatalogEntry[] {
    const entries = this.#add(upstream, tools);
    if (!more) this.#listed.add(upstream);
    this.options.onAdd?.(entries);
    if (!more) this.options.onListed?.(upstream, this);
    return entries;
  }

  #add(upstream: string, tools: Tool[]): CatalogEntry[] {
    const visible = tools.filter(
      (tool) =>
        !this.shadowedByAction(this.visibleName(upstream, tool.name)) &&
        !isUpstreamStatusTool(tool, this.options.statusTool),
    );
    return visible.map((tool) => {
      const name = this.visibleName(upstream, tool.name);
      // The config's entry (by the naming rule, tool-names.ts), with the command line's flags laid over it.
      const fromConfig = this.#contractFor({ name, upstream, upstreamName: tool.name });
      const declaredConfig = this.options.overrides
        ? this.options.overrides.over(name, tool.name, fromConfig)
        : fromConfig;
      let declared: ToolContract | undefined;
      if (declaredConfig) {
        const { status_probe, ...rest } = declaredConfig;
        declared = {
          ...rest,
          ...(status_probe ? { status_probe: this.options.probeFor(name, status_probe) } : {}),
        } as ToolContract;
      }
      const defaults = this.options.defaults;
      const source: ContractSource = declared
        ? 'declared'
        : hasEffectHints(tool.annotations)
          ? 'annotations'
          : defaults
            ? 'defaults'
            : 'cautious_default';
      const contract = declared ?? (source === 'defaults' ? defaultsContract(defaults) : undefined);
      const entry: CatalogEntry = {
        name,
        upstream,
        upstreamName: tool.name,
        tool,
        contract: resolveContract(
          contract,
          { ...tool.annotations, taskSupport: tool.execution?.taskSupport },
          secretPathsFromSchema(tool.inputSchema),
        ),
        source,
        validate: inputValidators.for(tool.inputSchema),
      };
      this.#entries.set(name, entry);
      return entry;
    });
  }

  /**
   * The contract the config declares for a tool, by the naming rule of
   * tool-names.ts: its published name first, else `upstream__tool` or its bare
   * name (several matches, or a key naming several tools, are reported as config errors).
   */
  #contractFor(tool: NamedTool): GatewayToolContractConfig | undefined {
    const { contracts, separator } = this.options;
    if (Object.hasOwn(contracts, tool.name)) return contracts[tool.name];
    const key = Object.keys(contracts).find((k) => keyNames(k, tool, separator));
    return key === undefined ? undefined : contracts[key];
  }

  /** The tool a config key names (tool-names.ts), if it names exactly one. */
  named(key: string): CatalogEntry | undefined {
    const exact = this.#entries.get(key);
    if (exact) return exact;
    const named = this.entries().filter((entry) => keyNames(key, entry, this.options.separator));
    return named.length === 1 ? named[0] : undefined;
  }

  /** The upstreams whose tools are known now. */
  listedUpstreams(): string[] {
    return [...this.#listed];
  }

  /** Forgets an upstream's tools (all upstreams' without an argument); action tools stay. */
  clear(upstream?: string): void {
    if (upstream === undefined) this.#listed.clear();
    else this.#listed.delete(upstream);
    for (const [name, entry] of this.#entries)
      if (!entry.action && (upstream === undefined || entry.upstream === upstream))
        this.#entries.delete(name);
  }

  get(name: string): CatalogEntry | undefined {
    return this.#entries.get(name);
  }

  entries(): CatalogEntry[] {
    return [...this.#entries.values()];
  }

  /**
   * The tool as published to the client: visible name, honest annotations, and whether Idem runs
   * it as a task (its contract, not the upstream's listing: Idem follows an upstream's task itself).
   */
  publish(entry: CatalogEntry): Tool {
    const annotations = publishedAnnotations(entry);
    const { task } = entry.contract;
    const execution =
      task !== 'off'
        ? { ...entry.tool.execution, taskSupport: task }
        : entry.tool.execution?.taskSupport !== undefined
          ? { ...entry.tool.execution, taskSupport: 'forbidden' as const }
          : entry.tool.execution;
    return {
      ...entry.tool,
      name: entry.name,
      ...(annotations ? { annotations } : {}),
      ...(execution ? { execution } : {}),
    };
  }
}

/** The contract of a tool on the config's `defaults:` (replay: review unless they say otherwise). */
export function defaultsContract(defaults: GatewayDefaultsConfig | undefined): ToolContract {
  return { replay: 'review', ...defaults } as ToolContract;
}

/**
 * An action tool as a catalog entry. Its contract is the one declared beside
 * it (none: the cautious default); a `status` contract without a probe of its
 * own asks the channel (the SSH marker).
 */
export function actionEntry(action: ActionTool): CatalogEntry {
  const tool: Tool = { name: action.name, description: action.description, inputSchema: action.inputSchema };
  const declared = action.contract;
  const contract = actionContract(declared, action.channel);
  return {
    name: action.name,
    upstream: '',
    upstreamName: action.name,
    action,
    tool,
    contract: resolveContract(contract, undefined, secretPathsFromSchema(tool.inputSchema)),
    source: declared ? 'declared' : 'cautious_default',
    validate: inputValidators.for(tool.inputSchema),
  };
}
