import type { OpenApiImport } from './import.js';

/** A text as one comment line: no line break a reader (or YAML) could take for config. */
function commentText(text: string, max = 160): string {
  const line = text
    .replace(/[\p{Cc}\u2028\u2029]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A YAML key as written: bare when plain, else JSON-quoted. */
function key(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name) ? name : JSON.stringify(name);
}

/**
 * Past this many tools, `idem init --openapi` suggests an `include:`: every tool is in every
 * tools/list a client fetches and in the model's context (GitHub's 1,221 make a 1.8 MB list), and
 * each input schema is compiled at start.
 */
export const LARGE_IMPORT = 100;

/** A commented `include:` listing the document's tags, most operations first, to uncomment the few the agent needs. */
function includeSuggestion(tools: readonly OpenApiImport['tools'][number][]): string[] {
  const byTag = new Map<string, number>();
  let untagged = 0;
  for (const tool of tools) {
    if (tool.tags.length === 0) untagged++;
    for (const tag of tool.tags) byTag.set(tag, (byTag.get(tag) ?? 0) + 1);
  }
  const tags = [...byTag].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const lines = [
    `    # ${tools.length} operations is a lot for an agent: every one is in each tools/list (and the model's`,
    '    # context) and is compiled at start. Serve only what the agent needs: uncomment include: and the',
    '    # tags, operationIds or path globs (/repos/**) it uses.',
    '    # include:',
  ];
  for (const [tag, count] of tags)
    lines.push(`    #   - ${JSON.stringify(`tag:${tag}`)}   # ${count} operation${count === 1 ? '' : 's'}`);
  if (untagged > 0)
    lines.push(
      `    #   (${untagged} operation${untagged === 1 ? '' : 's'} without a tag: name them by operationId or path)`,
    );
  return lines;
}

/**
 * The config `idem init --openapi` writes: the document under http_tools_from, the credential
 * and server as comments to fill in, and per operation its suggested contract as a commented
 * `tools:` line — a suggestion the operator confirms by uncommenting it (until then the gateway
 * applies the same suggestion, and `idem lint` lists it as unconfirmed). Skipped operations are
 * listed with their reasons.
 */
export function openApiDraft(
  written: { openapi: string; server?: string; documentServer: string },
  imported: OpenApiImport,
): string {
  const tools = imported.tools;
  const lines = [
    `# Written by \`idem init --openapi\` from ${commentText(imported.source)}: ${tools.length} operation${tools.length === 1 ? '' : 's'} as HTTP tools, ${imported.skipped.length} skipped.`,
    '# Each tool gets the contract the document suggests (docs/openapi.md): GET/HEAD read_only, an',
    '# Idempotency-Key header parameter keyed, everything else review. Confirm one by uncommenting',
    '# its line under tools: (and tools: itself), or write your own there.',
    '# `idem lint --config <this file>` lists every tool and why; `idem gateway --config <this file>` serves them.',
    '# credentials:',
    '#   api: { env: API_TOKEN }          # the token, by reference: never in this file',
    'http_tools_from:',
    `  - openapi: ${JSON.stringify(written.openapi)}`,
    '    # credential: api                 # sent as the security scheme says (bearer, basic, API key)',
    written.server
      ? `    server: ${JSON.stringify(written.server)}`
      : `    # server: https://…               # instead of the document's ${commentText(written.documentServer, 80)}`,
  ];
  if (tools.length > LARGE_IMPORT) lines.push(...includeSuggestion(tools));
  if (tools.length > 0) lines.push('# tools:');
  for (const tool of tools) {
    const scope = tool.businessKey.path ? `, scope: { business_key: ${tool.businessKey.path} }` : '';
    lines.push(
      `#   ${key(tool.name)}: { replay: ${tool.replay}${scope} }   # ${commentText(`${tool.label}: ${tool.why}${tool.businessKey.path ? `; business key offered: ${tool.businessKey.why}` : ''}`)}`,
    );
  }
  if (imported.skipped.length > 0) {
    lines.push('# Skipped (not served):');
    for (const skipped of imported.skipped)
      lines.push(`#   ${commentText(`${skipped.label} (${skipped.name}): ${skipped.reason}`)}`);
  }
  return `${lines.join('\n')}\n`;
}
