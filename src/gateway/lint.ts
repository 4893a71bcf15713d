import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { Credentials } from '../credentials/index.js';
import type { ActionTool } from '../dispatch/channel.js';
import { UpstreamConnection } from '../dispatch/mcp/index.js';
import { ConfigError, CredentialError, messageOf } from '../errors.js';
import { KnownSecrets } from '../identity/redaction.js';
import { actionToolsOf } from './catalog/action-tools.js';
import { annotationMismatches, type CatalogEntry, settlingLine, ToolCatalog } from './catalog/catalog.js';
import { contractProblems } from './catalog/contract-check.js';
import { toolNameEntries, toolNameProblems } from './catalog/tool-names.js';
import { type GatewayConfig, NAME_SEPARATOR } from './config/config.js';
import { importHttpTools, type OpenApiImport } from './openapi/index.js';
import { upstreamSpecsOf } from './upstreams/specs.js';

export interface LintFinding {
  tool: string;
  message: string;
  /** A config line that would settle the finding, where there is one. */
  settle?: string;
  /** Said for the record (an imported tool whose contract the operator declared): not a problem. */
  info?: boolean;
}

/**
 * `idem lint`: connects to every upstream, lists its tools, and reports every
 * tool published with other annotations than its upstream gives it, or with a
 * read_only contract its upstream does not confirm (docs/contracts.md), every tool on the cautious
 * default (neither annotations nor a contract, no `defaults:`) with the line
 * that would settle it, and every contract that names no tool.
 */
export async function lintGateway(declared: GatewayConfig, version: string): Promise<LintFinding[]> {
  const findings: LintFinding[] = [];
  const config = await withImports(declared, findings);
  const upstreams = upstreamSpecsOf(config);
  const built = await lintActionTools(config, findings);
  const broken = new Set<string>();
  for (const problem of contractProblems(config, built)) {
    broken.add(problem.where);
    findings.push({ tool: problem.where, message: `the gateway would refuse to start: ${problem.text}` });
  }
  // The rest is linted as if the broken contracts were fixed: each listing would otherwise fail on them.
  const actionTools = built.filter((a) => ![...broken].some((w) => w.endsWith(`.${a.name}.contract`)));
  const catalog = new ToolCatalog({
    contracts: Object.fromEntries(
      Object.entries(config.tools ?? {}).filter(([name]) => !broken.has(`tools.${name}`)),
    ),
    defaults: broken.has('defaults') ? undefined : config.defaults,
    prefixed: upstreams.length > 1,
    separator: NAME_SEPARATOR,
    probeFor: () => async () => ({ outcome: 'unknown' }),
    actionTools,
    statusTool: config.status_tool,
  });
  for (const entry of catalog.actionEntries()) cautiousFinding(entry, findings);
  for (const spec of upstreams) {
    const connection = new UpstreamConnection(
      spec,
      {
        onRequest: async (r) => ({
          jsonrpc: '2.0',
          id: r.id,
          error: { code: -32601, message: 'idem lint answers no requests' },
        }),
        onNotification: () => {},
      },
      { stderr: 'ignore' },
    );
    try {
      await connection.start({
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'idem-lint', version },
      });
      let cursor: string | undefined;
      do {
        const reply = await connection.request('tools/list', cursor ? { cursor } : undefined);
        if ('error' in reply) throw new Error(reply.error.message);
        const page = reply.result as { tools?: Tool[]; nextCursor?: string };
        for (const tool of page.tools ?? []) {
          const name = catalog.visibleName(spec.name, tool.name);
          if (catalog.shadowedByAction(name))
            findings.push({
              tool: name,
              message: `${name}: upstream ${spec.name} offers a tool of this name, and the config's action tool of the same name hides it`,
            });
        }
        for (const entry of catalog.add(spec.name, page.tools ?? [], page.nextCursor !== undefined)) {
          for (const mismatch of annotationMismatches(entry))
            findings.push({ tool: entry.name, ...mismatch });
          cautiousFinding(entry, findings);
        }
        cursor = page.nextCursor;
      } while (cursor);
    } catch (error) {
      findings.push({
        tool: `(upstream ${spec.name})`,
        message: `could not list tools: ${messageOf(error)}`,
      });
    } finally {
      await connection.close();
    }
  }
  // The gateway's own check, on what every upstream that answered listed.
  const all = upstreams.map((u) => u.name);
  const listed = new Set(catalog.listedUpstreams());
  for (const problem of toolNameProblems(
    toolNameEntries(config),
    catalog.entries(),
    { all, unlisted: all.filter((u) => !listed.has(u)) },
    NAME_SEPARATOR,
  ))
    findings.push({
      tool: problem.entry.key,
      message: `${problem.text}${problem.entry.security ? ' The gateway would stop: the tool it was meant for would run unprotected.' : ' The gateway would refuse to start.'}`,
    });
  return findings;
}

/** A tool on the cautious default, with the line that settles it (for an action tool: its own contract). */
function cautiousFinding(entry: CatalogEntry, findings: LintFinding[]): void {
  if (entry.source !== 'cautious_default') return;
  if (entry.action) {
    findings.push({
      tool: entry.name,
      message: `${entry.name}: an action tool (${entry.action.channel.kind}) without a contract, so it is treated as irreversible (replay: review, scope: actor, attach_window: 15m). Declare one beside it, e.g. contract: { replay: keyed } when the target honours the idempotency key.`,
    });
    return;
  }
  const settle = settlingLine(entry.name);
  findings.push({
    tool: entry.name,
    message: `${entry.name}: neither annotations nor a contract, so it is treated as having effects (replay: review, scope: actor, attach_window: 15m): an identical call within 15 minutes gets the stored result, marked as a replay. If it only reads: ${settle}; if it has effects, declare its contract under tools.${entry.name}; or set defaults: for every such tool.`,
    settle,
  });
}

/**
 * The action tools of a config, as the gateway would build them, and every
 * credential they name that cannot be resolved now (their calls would be
 * denied). Values are resolved into a throwaway set and never printed.
 */
async function lintActionTools(config: GatewayConfig, findings: LintFinding[]): Promise<ActionTool[]> {
  let credentials: Credentials;
  let tools: ActionTool[];
  try {
    credentials = Credentials.fromConfig(config.credentials, new KnownSecrets());
    tools = actionToolsOf(config, credentials);
  } catch (error) {
    if (!(error instanceof ConfigError || error instanceof CredentialError)) throw error;
    findings.push({ tool: '(config)', message: `the gateway would refuse to start: ${error.message}` });
    return [];
  }
  for (const tool of tools) {
    const name = tool.channel.credential;
    if (!name) continue;
    await credentials.resolve(name).catch((error: Error) => {
      findings.push({
        tool: tool.name,
        message: `${tool.name}: ${error.message}; its calls would be denied`,
      });
    });
  }
  return tools;
}

/**
 * The config with its OpenAPI operations imported as the gateway would (a document that cannot be
 * read is a finding, and its tools are left out), and a finding per imported tool — the contract it
 * got and why, the business key offered, what was left out — and per skipped operation. A tool
 * whose contract the operator declared under tools: is listed for the record only.
 */
async function withImports(declared: GatewayConfig, findings: LintFinding[]): Promise<GatewayConfig> {
  let imported: { config: GatewayConfig; imports: OpenApiImport[] };
  try {
    imported = await importHttpTools(declared);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    findings.push({ tool: '(config)', message: `the gateway would refuse to start: ${error.message}` });
    const { http_tools_from: _, ...rest } = declared;
    return rest;
  }
  for (const result of imported.imports) {
    for (const tool of result.tools) {
      const key = tool.businessKey.path;
      const keyText = key
        ? ` Business key offered: ${key} (${tool.businessKey.why}); not applied — add scope: { business_key: ${key} } to use it.`
        : ` No business key offered: ${tool.businessKey.why}.`;
      const notes = tool.notes.length > 0 ? ` Note: ${tool.notes.join('; ')}.` : '';
      const origin = `${tool.name}: imported from ${result.source} (${tool.label}): replay: ${tool.replay}, ${tool.why}.`;
      if (tool.confirmed) {
        findings.push({ tool: tool.name, message: `${origin}${notes}`, info: true });
        continue;
      }
      const settle = `tools.${tool.name}: { replay: ${tool.replay}${key ? `, scope: { business_key: ${key} }` : ''} }`;
      findings.push({
        tool: tool.name,
        message: `${origin} A suggestion from the document: confirm it (or change it) under tools.${tool.name}.${keyText}${notes}`,
        settle,
      });
    }
    for (const skipped of result.skipped)
      findings.push({
        tool: skipped.name,
        message: `${skipped.name}: ${skipped.label} of ${result.source} is not served: ${skipped.reason}`,
      });
  }
  return imported.config;
}
