import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** The text of a tool result's first content item. */
export function textOf(result: unknown): string {
  const content = (result as CallToolResult).content ?? [];
  const first = content[0];
  return first?.type === 'text' ? first.text : '';
}

/** The `structuredContent.idem` block of an Idem answer, if it is one. */
export interface IdemInfo {
  code: string;
  ref: string | null;
  state: string | null;
}

export function idemOf(result: unknown): IdemInfo | undefined {
  return (result as { structuredContent?: { idem?: IdemInfo } } | undefined)?.structuredContent?.idem;
}
