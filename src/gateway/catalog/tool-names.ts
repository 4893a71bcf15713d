import { closest, distance } from 'fastest-levenshtein';
import { ConfigError } from '../../errors.js';
import { type GatewayConfig, NAME_SEPARATOR } from '../config/config.js';

/**
 * How a tool name written in the config names a published tool (DESIGN §5:
 * every such entry must resolve to a tool that is published; one that
 * resolves to nothing is an error, never a silent fallback to the defaults).
 *
 * A key names the published tool P when it is
 * - P's published name (`charge_card` with one upstream, `pay__charge_card` with several; an action tool's name),
 * - `<upstream>__<tool>` for an upstream tool, whether or not names are prefixed now, or
 * - the upstream's own name of the tool (`charge_card`), while that names one published tool only.
 * So a config keeps meaning the same tool when a second upstream is added.
 * A key must name exactly one published tool.
 */

/** A published tool as the naming rule sees it. */
export interface NamedTool {
  /** The name the client sees. */
  name: string;
  /** Its upstream; '' for an action tool. */
  upstream: string;
  /** The name its upstream knows it by. */
  upstreamName: string;
}

/** The names a config key may give this tool. */
export function aliasesOf(tool: NamedTool, separator: string): string[] {
  if (!tool.upstream) return [tool.name];
  return [...new Set([tool.name, `${tool.upstream}${separator}${tool.upstreamName}`, tool.upstreamName])];
}

/** Whether a config key names this tool. */
export function keyNames(key: string, tool: NamedTool, separator: string): boolean {
  return aliasesOf(tool, separator).includes(key);
}

/** A config entry that names a tool. */
export interface ToolNameEntry {
  /** Where it is, e.g. `auth.oauth.tool_scopes.charge_card`. */
  where: string;
  /** The tool name as written. */
  key: string;
  /**
   * A scope or an approval: while it names nothing, the tool it was meant for
   * runs unprotected, so the gateway stops rather than serve.
   */
  security: boolean;
  /** Whether two entries of this group may not name one tool (two contracts for one tool). */
  group?: string;
  /**
   * A pattern given on the command line (`--read-only`, `--tool`): it names every tool it matches,
   * and must match one at least. Without it, `key` names a tool by the rule above.
   */
  matches?(tool: NamedTool): boolean;
}

/** Every entry of a config that names a tool. */
export function toolNameEntries(config: GatewayConfig): ToolNameEntry[] {
  const entries: ToolNameEntry[] = [];
  for (const key of Object.keys(config.auth?.oauth?.tool_scopes ?? {}))
    entries.push({ where: `auth.oauth.tool_scopes.${key}`, key, security: true });
  for (const [key, contract] of Object.entries(config.tools ?? {})) {
    const approval = (contract.approval ?? 'none') !== 'none' || (contract.allow_actors?.length ?? 0) > 0;
    entries.push({ where: `tools.${key}`, key, security: approval, group: 'tools' });
    if (contract.status_probe)
      entries.push({
        where: `tools.${key}.status_probe.tool`,
        key: contract.status_probe.tool,
        security: false,
      });
  }
  return entries;
}

/** A config entry that names no published tool, or several, or the same as another entry. */
export interface ToolNameProblem {
  entry: ToolNameEntry;
  text: string;
}

/**
 * The entries that do not name exactly one published tool. `upstreams.unlisted`
 * are those whose tools are not known yet: an entry one of them may still
 * satisfy is judged when it is listed.
 */
export function toolNameProblems(
  entries: readonly ToolNameEntry[],
  published: readonly NamedTool[],
  upstreams: { all: readonly string[]; unlisted: readonly string[] },
  separator: string,
): ToolNameProblem[] {
  const { all, unlisted } = upstreams;
  const problems: ToolNameProblem[] = [];
  const claimed = new Map<string, ToolNameEntry>();
  for (const entry of entries) {
    const named = published.filter((tool) =>
      entry.matches ? entry.matches(tool) : keyNames(entry.key, tool, separator),
    );
    if (named.length > 1 && !entry.matches) {
      problems.push({
        entry,
        text: `${entry.where}: "${entry.key}" names ${named.length} published tools (${named.map((t) => t.name).join(', ')}); write the one you mean as it is published.`,
      });
      continue;
    }
    const tool = named[0];
    if (!tool) {
      if (mayStillName(entry.key, unlisted, all, separator)) continue;
      const text = entry.matches
        ? unmatchedText(entry.key, published, separator)
        : unresolvedText(entry.key, published, separator);
      problems.push({ entry, text: `${entry.where}: ${text}` });
      continue;
    }
    if (!entry.group) continue;
    const groupKey = `${entry.group}\u0000${tool.name}`;
    const other = claimed.get(groupKey);
    if (other) {
      problems.push({
        entry,
        text: `${entry.where}: ${other.where} names the same tool (${tool.name}); keep one of them.`,
      });
    } else claimed.set(groupKey, entry);
  }
  return problems;
}

/**
 * Whether an upstream not listed yet may still publish a tool this key names:
 * a key qualified with an upstream's name waits for that upstream only; any
 * other key, for every upstream (its own name of a tool may be anything).
 */
function mayStillName(
  key: string,
  unlisted: readonly string[],
  upstreams: readonly string[],
  separator: string,
): boolean {
  const qualifier = upstreams.find((u) => key.startsWith(`${u}${separator}`));
  return qualifier === undefined ? unlisted.length > 0 : unlisted.includes(qualifier);
}

function unresolvedText(key: string, published: readonly NamedTool[], separator: string): string {
  const base = `no published tool is named "${key}" (no upstream offers a tool of that name, and no action tool has it)`;
  const byAlias = aliasMap(published, separator);
  if (byAlias.size === 0) return `${base}.`;
  const rule = `Name a tool as it is published, as <upstream>${separator}<tool>, or by its upstream's own name while only one upstream publishes that name.`;
  const near = nearestName(key, [...byAlias.keys()]);
  if (near) return `${base}; did you mean ${byAlias.get(near)}? ${rule}`;
  return `${base}. ${publishedList(byAlias)}. ${rule}`;
}

/** A command-line pattern that matches nothing: the nearest name (or `prefix*`) when one is close. */
function unmatchedText(pattern: string, published: readonly NamedTool[], separator: string): string {
  const base = `no published tool matches "${pattern}"`;
  const byAlias = aliasMap(published, separator);
  if (byAlias.size === 0) return `${base}.`;
  // `lsit_*` is a misspelt prefix: compared with each name's prefix of that length.
  const prefix = /^([^*?[\]{}()!+@]+)\*$/.exec(pattern)?.[1];
  const candidates = prefix
    ? [...byAlias.keys()].map((alias) => `${alias.slice(0, prefix.length)}*`)
    : [...byAlias.keys()].map((alias) => byAlias.get(alias) as string);
  const near = nearestName(pattern, [...new Set(candidates)]);
  return near ? `${base}; did you mean ${near}?` : `${base}. ${publishedList(byAlias)}.`;
}

function aliasMap(published: readonly NamedTool[], separator: string): Map<string, string> {
  const byAlias = new Map<string, string>();
  for (const tool of published) for (const alias of aliasesOf(tool, separator)) byAlias.set(alias, tool.name);
  return byAlias;
}

/** The candidate nearest to what was written, when it is near enough to be a misspelling of it. */
function nearestName(written: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0) return undefined;
  const nearest = closest(written, [...candidates]);
  return distance(written, nearest) <= Math.max(2, Math.floor(written.length / 3)) ? nearest : undefined;
}

function publishedList(byAlias: Map<string, string>): string {
  const names = [...new Set(byAlias.values())];
  return `Published: ${names.slice(0, 12).join(', ')}${names.length > 12 ? ', …' : ''}`;
}

/**
 * What a published name may be, knowing only the config: for a check that
 * runs before any tool is listed (the front's scope check comes before the
 * session looks the tool up). A superset, so a scope is never missed.
 */
export function candidatesFor(
  visible: string,
  config: { upstreams: readonly string[]; actionTools: readonly string[]; separator: string },
): NamedTool[] {
  const { upstreams, actionTools, separator } = config;
  const out: NamedTool[] = actionTools.includes(visible)
    ? [{ name: visible, upstream: '', upstreamName: visible }]
    : [];
  if (upstreams.length === 1)
    out.push({ name: visible, upstream: upstreams[0] as string, upstreamName: visible });
  else
    for (const upstream of upstreams)
      if (visible.startsWith(`${upstream}${separator}`))
        out.push({
          name: visible,
          upstream,
          upstreamName: visible.slice(upstream.length + separator.length),
        });
  return out;
}

/** Whether a config key may name the tool published as `visible` (the rule above, before anything is listed). */
export function configKeyMatcher(
  config: GatewayConfig,
  separator: string,
): (key: string, visible: string) => boolean {
  const known = {
    upstreams: Object.keys(config.upstreams),
    actionTools: [...Object.keys(config.http_tools ?? {}), ...Object.keys(config.ssh_tools ?? {})],
    separator,
  };
  return (key, visible) => candidatesFor(visible, known).some((tool) => keyNames(key, tool, separator));
}

/** What a guard's catalog tells it. */
export interface ListedTools {
  entries(): NamedTool[];
  listedUpstreams(): string[];
}

/**
 * Checks the config's tool names whenever an upstream's tools are
 * (re)listed, in any session. A scope or an approval that names nothing stops
 * the gateway whenever it is found (the tool it was meant for would run
 * unprotected); any other entry stops it when found at an upstream's first
 * listing in this process (start-up), and is a warning when a later listing
 * (tools/list_changed, a restarted upstream) breaks it. Each problem is said once.
 */
export class ToolNameGuard {
  readonly #entries: ToolNameEntry[];
  readonly #upstreams: string[];
  readonly #everListed = new Set<string>();
  readonly #told = new Set<string>();
  #fault: ConfigError | undefined;

  constructor(
    config: GatewayConfig,
    readonly report: { warn(message: string): void; fault(error: ConfigError): void },
    readonly separator = NAME_SEPARATOR,
  ) {
    this.#entries = toolNameEntries(config);
    this.#upstreams = Object.keys(config.upstreams);
  }

  /** Entries from elsewhere than the config (the command line's patterns, ToolOverrides.nameEntries), held to the same rule. */
  include(entries: readonly ToolNameEntry[]): void {
    this.#entries.push(...entries);
  }

  /** Set once the config was found to name a tool in a way that stops the gateway: no tool runs from then on. */
  get fault(): ConfigError | undefined {
    return this.#fault;
  }

  listed(upstream: string, catalog: ListedTools): void {
    const startUp = !this.#everListed.has(upstream);
    this.#everListed.add(upstream);
    const listed = new Set(catalog.listedUpstreams());
    const problems = toolNameProblems(
      this.#entries,
      catalog.entries(),
      { all: this.#upstreams, unlisted: this.#upstreams.filter((u) => !listed.has(u)) },
      this.separator,
    ).filter((p) => !this.#told.has(p.text));
    for (const problem of problems) this.#told.add(problem.text);
    const stopping = problems.filter((p) => p.entry.security || startUp);
    for (const problem of problems) if (!stopping.includes(problem)) this.report.warn(problem.text);
    if (stopping.length === 0 || this.#fault) return;
    this.#fault = new ConfigError(
      `the config or the command line names tools that are not published, so the gateway runs no tool until that is fixed:\n${stopping.map((p) => `  ${p.text}`).join('\n')}`,
    );
    this.report.fault(this.#fault);
  }
}
