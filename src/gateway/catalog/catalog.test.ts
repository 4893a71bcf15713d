import type { Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { resolveContract, type ToolContract } from '../../contracts/contract.js';
import { STATUS_TOOL_DESCRIPTION } from '../../executions/answers.js';
import { annotationMismatches, type CatalogEntry, cautiousDefaultNotice, ToolCatalog } from './catalog.js';

function entry(annotations: ToolAnnotations | undefined, declared?: ToolContract): CatalogEntry {
  return {
    name: 't',
    upstream: 'u',
    upstreamName: 't',
    tool: { name: 't', inputSchema: { type: 'object' }, ...(annotations ? { annotations } : {}) },
    contract: resolveContract(declared, annotations),
    source: declared ? 'declared' : 'annotations',
    validate: undefined,
  };
}

describe('annotationMismatches', () => {
  it('finds nothing where the published annotations are what the upstream says', () => {
    expect(annotationMismatches(entry({ idempotentHint: true }, { replay: 'keyed' }))).toEqual([]);
    expect(annotationMismatches(entry({ readOnlyHint: true, idempotentHint: true }))).toEqual([]);
    expect(annotationMismatches(entry(undefined, { replay: 'read_only' }))).toEqual([]);
    // An absent idempotentHint published as false is what MCP reads for it anyway.
    expect(annotationMismatches(entry({ destructiveHint: true }, { replay: 'review' }))).toEqual([]);
  });

  it('finds nothing about idempotentHint, with or without a contract, after_completion: new included', () => {
    expect(annotationMismatches(entry({ idempotentHint: true }))).toEqual([]);
    expect(
      annotationMismatches(entry({ idempotentHint: true }, { replay: 'review', after_completion: 'new' })),
    ).toEqual([]);
    expect(annotationMismatches(entry({ idempotentHint: false }, { replay: 'keyed' }))).toEqual([]);
  });

  it('reports a readOnlyHint the contract contradicts, once, with the line that settles it', () => {
    expect(
      annotationMismatches(entry({ readOnlyHint: true, idempotentHint: true }, { replay: 'keyed' })),
    ).toEqual([
      {
        message:
          't: the upstream says readOnlyHint: true, but the contract declares replay: keyed, so it is published readOnlyHint: false. If the upstream is right: tools: { t: { replay: read_only } }',
        settle: 'tools: { t: { replay: read_only } }',
      },
    ]);
  });

  it('reports a read_only contract the upstream does not confirm, once', () => {
    expect(annotationMismatches(entry({ idempotentHint: true }, { replay: 'read_only' }))).toEqual([
      {
        message: 't: the contract says read_only, but the upstream does not mark the tool readOnlyHint: true',
      },
    ]);
    // Not destructive: the operator's read_only is plausible, and the published hints are the upstream's.
    expect(
      annotationMismatches(entry({ idempotentHint: true, destructiveHint: false }, { replay: 'read_only' })),
    ).toEqual([]);
  });
});

describe('ToolCatalog', () => {
  const catalog = (statusTool?: string) =>
    new ToolCatalog({
      contracts: {},
      prefixed: true,
      separator: '__',
      probeFor: () => async () => ({ outcome: 'unknown' }),
      ...(statusTool ? { statusTool } : {}),
    });
  const tool = (name: string, description?: string): Tool => ({
    name,
    inputSchema: { type: 'object' },
    ...(description ? { description } : {}),
  });

  it("leaves out an upstream's own status tool (a library-built upstream): the gateway's is the one that knows its refs", () => {
    const listed = catalog('idem_execution_status').add('payments', [
      tool('charge_card'),
      tool('idem_execution_status', STATUS_TOOL_DESCRIPTION),
    ]);
    expect(listed.map((e) => e.name)).toEqual(['payments__charge_card']);
  });

  it('knows the library status tool under another name by its description, and a same-named one by its name', () => {
    expect(
      catalog('idem_execution_status')
        .add('a', [
          tool('status_of', STATUS_TOOL_DESCRIPTION),
          tool('idem_execution_status', 'something else'),
        ])
        .map((e) => e.name),
    ).toEqual([]);
    expect(
      catalog('gateway_status')
        .add('a', [tool('idem_execution_status')])
        .map((e) => e.name),
    ).toEqual(['a__idem_execution_status']);
  });
});

describe('cautiousDefaultNotice', () => {
  it('never offers a tool that writes as its example of one that only reads (server-github lists create_or_update_file first)', () => {
    const notice = cautiousDefaultNotice([
      'create_or_update_file',
      'push_files',
      'get_file_contents',
      'list_issues',
    ]);
    expect(notice).toContain('tools: { get_file_contents: { replay: read_only } }');
    expect(notice).not.toContain('create_or_update_file: { replay: read_only }');
  });

  it('shows a placeholder when no name says it only reads', () => {
    const notice = cautiousDefaultNotice(['create_issue', 'echo']);
    expect(notice).toContain('tools: { <a tool that only reads>: { replay: read_only } }');
    expect(notice).not.toMatch(/(create_issue|echo): \{ replay: read_only \}/);
  });
});
