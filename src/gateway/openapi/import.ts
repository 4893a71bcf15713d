import { type HttpToolSpec, HttpToolSpecSchema } from '../../dispatch/http/index.js';
import { idemEnvironment } from '../../environment.js';
import { ConfigError } from '../../errors.js';
import type { Logger } from '../../executions/call.js';
import { resolveDataDir } from '../../identity/data-dir.js';
import { InputValidators } from '../catalog/input-validators.js';
import type { GatewayConfig } from '../config/config.js';
import type { BusinessKeySuggestion } from './contracts.js';
import { HTTP_METHOD_NAMES } from './document.js';
import { LimitExceeded, limitsOf } from './limits.js';
import { loadOpenApi } from './load.js';
import { toolNameOf } from './names.js';
import { type MappedOperation, mapOperation, type SkippedOperation } from './operations.js';
import type { PathSelection } from './prune.js';
import { SchemaBudget } from './schema.js';
import { operationSelector, type SelectableOperation } from './select.js';
import { serverText } from './servers.js';
import { ValidatedDocuments } from './validated.js';

/** An operation served as an HTTP action tool, with the contract it got and why (for lint). */
export interface ImportedTool {
  name: string;
  label: string;
  operationId?: string;
  tags: string[];
  replay: string;
  why: string;
  /** Its contract is the operator's own (`tools.<name>`), not the suggestion. */
  confirmed: boolean;
  businessKey: BusinessKeySuggestion;
  notes: string[];
}

/** What one `http_tools_from` entry gave. */
export interface OpenApiImport {
  where: string;
  source: string;
  /** The document's first server URL as written (for a message, or a draft). */
  server: string;
  tools: ImportedTool[];
  skipped: SkippedOperation[];
  /** How long loading and mapping took. */
  ms: number;
  /** Validated now, or these bytes were validated by an earlier start (validated.ts). */
  validation: 'done' | 'remembered';
  /** Path items resolved, of how many, when only those the `include:` selects were (a remembered document). */
  pathsRead?: { kept: number; of: number };
}

/**
 * The config with every `http_tools_from` operation added under `http_tools` — from there on an
 * imported tool is exactly a hand-written one (same checks, same channel) — and each `tools.<name>`
 * contract that names one moved beside it, where it overrides the suggested contract. A
 * hand-written `http_tools.<name>` wins over an operation of that name (which is then skipped).
 * A document that cannot be read, or an `include:` entry that selects nothing, stops the start.
 */
export async function importHttpTools(
  config: GatewayConfig,
  /** Documents validated by earlier starts (the data directory's): validated once, not at every start. */
  validated?: ValidatedDocuments,
): Promise<{ config: GatewayConfig; imports: OpenApiImport[] }> {
  const entries = config.http_tools_from ?? [];
  if (entries.length === 0) return { config, imports: [] };
  const httpTools: Record<string, HttpToolSpec> = { ...config.http_tools };
  const contracts = { ...config.tools };
  const takenBy = new Map<string, string>(Object.keys(httpTools).map((name) => [name, `http_tools.${name}`]));
  // Only to learn which schemas compile: the gateway's own validators compile them on use.
  const validators = new InputValidators(Number.MAX_SAFE_INTEGER, { quiet: true });
  const imports: OpenApiImport[] = [];
  for (const [index, entry] of entries.entries()) {
    const where = `http_tools_from[${index}]`;
    const started = performance.now();
    const limits = limitsOf(entry.limits);
    const { document, validation, pathsRead } = await loadOpenApi(
      entry.openapi,
      where,
      limits,
      validated,
      entry.include ? selectsAnyOf(operationSelector(entry.include)) : undefined,
    );
    const schemas = new SchemaBudget(limits);
    const selector = operationSelector(entry.include);
    const result: OpenApiImport = {
      where,
      source: entry.openapi,
      server: serverText(document.servers),
      tools: [],
      skipped: [],
      ms: 0,
      validation,
      ...(pathsRead ? { pathsRead } : {}),
    };
    // Every operation mapped first — its schemas copied and counted (schema.ts) — so that a
    // document past its bounds is refused before any schema is compiled, where the time goes.
    const operations: Array<MappedOperation | SkippedOperation> = [];
    for (const [path, item] of Object.entries(document.paths ?? {})) {
      for (const method of HTTP_METHOD_NAMES) {
        const operation = item[method];
        if (!operation) continue;
        const selectable = selectableOf(operation, method, path);
        if (!selector.selects(selectable)) continue;
        schemas.nextOperation();
        operations.push(
          mappedWithin(`${where}: ${entry.openapi}`, selectable, `${method.toUpperCase()} ${path}`, () =>
            mapOperation(method, path, item, operation, { document, entry, schemas }),
          ),
        );
      }
    }
    for (const mapped of operations) {
      if (mapped.kind === 'skipped') {
        result.skipped.push(mapped);
        continue;
      }
      const skip = (reason: string) => result.skipped.push({ ...mapped, kind: 'skipped', reason });
      const taken = takenBy.get(mapped.name);
      if (taken) {
        skip(
          `its tool name ${mapped.name} is taken by ${taken}${taken.startsWith('http_tools.') ? ' (declared by hand: that one is served)' : ''}`,
        );
        continue;
      }
      if (mapped.name === config.status_tool) {
        skip(`its tool name ${mapped.name} is the status tool's`);
        continue;
      }
      const declared = contracts[mapped.name];
      if (declared?.status_probe)
        throw new ConfigError(
          `tools.${mapped.name}.status_probe: ${mapped.name} is an HTTP tool imported from ${entry.openapi}; a status probe is for upstream tools`,
        );
      const { status_probe: _, ...ownContract } = declared ?? { replay: mapped.suggestion.replay };
      const contract: NonNullable<HttpToolSpec['contract']> = declared
        ? ownContract
        : { replay: mapped.suggestion.replay };
      const parsed = HttpToolSpecSchema.safeParse({ ...mapped.spec, contract });
      if (!parsed.success) {
        skip(`it does not make a valid HTTP tool: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
        continue;
      }
      if (!validators.for({ ...parsed.data.input_schema, type: 'object' })) {
        skip('its parameters and body do not make a JSON Schema the gateway can check arguments against');
        continue;
      }
      if (declared) delete contracts[mapped.name];
      httpTools[mapped.name] = parsed.data;
      takenBy.set(mapped.name, `${mapped.label} of ${entry.openapi}`);
      result.tools.push({
        name: mapped.name,
        label: mapped.label,
        ...(mapped.operationId ? { operationId: mapped.operationId } : {}),
        tags: mapped.tags,
        replay: contract.replay ?? 'review',
        why: declared ? `declared under tools.${mapped.name}` : mapped.suggestion.why,
        confirmed: declared !== undefined,
        businessKey: mapped.businessKey,
        notes: mapped.notes,
      });
    }
    const unused = selector.unused();
    if (unused.length > 0)
      throw new ConfigError(
        `${where}.include: ${unused.map((u) => JSON.stringify(u)).join(', ')} select${unused.length === 1 ? 's' : ''} no operation of ${entry.openapi}`,
      );
    if (!entry.include)
      for (const [name, item] of Object.entries(document.webhooks ?? {}))
        for (const method of HTTP_METHOD_NAMES)
          if (item[method])
            result.skipped.push({
              kind: 'skipped',
              name,
              label: `webhook ${name} (${method.toUpperCase()})`,
              tags: item[method]?.tags ?? [],
              reason: 'a webhook is a request the API makes to you, not one a tool sends',
            });
    result.ms = performance.now() - started;
    imports.push(result);
  }
  const { http_tools_from: _, ...rest } = config;
  return {
    config: { ...rest, http_tools: httpTools, tools: contracts },
    imports,
  };
}

/**
 * An operation mapped; skipped when its own input schema goes past its bound, and the document
 * refused when the schemas of all its operations together do, or one nests too deep (schema.ts).
 */
function mappedWithin(
  document: string,
  operation: { operationId?: string; toolName: string; tags: string[] },
  label: string,
  map: () => MappedOperation | SkippedOperation,
): MappedOperation | SkippedOperation {
  try {
    return map();
  } catch (error) {
    if (!(error instanceof LimitExceeded)) throw error;
    if (error.limit !== 'inputSchema')
      throw new ConfigError(`${document} is refused: ${error.message}, at ${label}`);
    const { operationId, toolName, tags } = operation;
    return {
      kind: 'skipped',
      name: toolName,
      label,
      ...(operationId ? { operationId } : {}),
      tags,
      reason: error.message,
    };
  }
}

/** Skipped operations said one per line at start, up to this many; `idem lint` lists all. */
const SKIPPED_LINES = 20;

/** What the start says about the imports: one line per document, one per skipped operation. */
export function importLines(imports: readonly OpenApiImport[]): { info: string[]; warn: string[] } {
  const info: string[] = [];
  const warn: string[] = [];
  for (const result of imports) {
    info.push(
      `${result.where}: ${result.tools.length} operation${result.tools.length === 1 ? '' : 's'} of ${result.source} served as HTTP tools, ${result.skipped.length} skipped (${Math.round(result.ms)} ms${result.validation === 'remembered' ? '; validated by an earlier start' : ''}${result.pathsRead ? `; ${result.pathsRead.kept} of ${result.pathsRead.of} paths read` : ''})`,
    );
    for (const skipped of result.skipped.slice(0, SKIPPED_LINES))
      warn.push(`${result.where}: skipped ${skipped.label} (${skipped.name}): ${skipped.reason}`);
    if (result.skipped.length > SKIPPED_LINES)
      warn.push(
        `${result.where}: … and ${result.skipped.length - SKIPPED_LINES} more skipped; idem lint lists each with its reason`,
      );
  }
  return { info, warn };
}

/** The config the gateway serves, imports done, and what they served and skipped said on the operator's log (else stderr). */
export async function configWithImports(
  declared: GatewayConfig,
  logger: Logger | undefined,
): Promise<GatewayConfig> {
  const { config, imports } = await importHttpTools(declared, validatedDocumentsOf(declared));
  const { info, warn } = importLines(imports);
  const say = (line: string, level: 'info' | 'warn') => {
    if (!logger) process.stderr.write(`idem gateway: ${line}\n`);
    else if (level === 'info' && logger.info) logger.info(line);
    else logger.warn(line);
  };
  for (const line of info) say(line, 'info');
  for (const line of warn) say(line, 'warn');
  return config;
}

/** The documents the data directory remembers as validated (only when there is an import to do). */
export function validatedDocumentsOf(config: GatewayConfig): ValidatedDocuments | undefined {
  if ((config.http_tools_from ?? []).length === 0) return undefined;
  return new ValidatedDocuments(resolveDataDir(config.data_dir ?? idemEnvironment().dataDir));
}

/** What an `include:` entry reads of an operation (select.ts). */
function selectableOf(
  operation: { operationId?: string; tags?: string[] },
  method: string,
  path: string,
): SelectableOperation & { tags: string[] } {
  return {
    ...(operation.operationId ? { operationId: operation.operationId } : {}),
    toolName: toolNameOf(operation.operationId, method, path),
    path,
    tags: operation.tags ?? [],
  };
}

/**
 * The path items holding an operation the selector selects, read before any `$ref` is resolved
 * (load.ts). A path item that is itself a `$ref` is kept: its operations are not known yet.
 */
function selectsAnyOf(selector: ReturnType<typeof operationSelector>): PathSelection {
  return (path, item) =>
    typeof item.$ref === 'string' ||
    HTTP_METHOD_NAMES.some((method) => {
      const operation = item[method];
      return (
        typeof operation === 'object' &&
        operation !== null &&
        selector.selects(selectableOf(operation as { operationId?: string; tags?: string[] }, method, path))
      );
    });
}
