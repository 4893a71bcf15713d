import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * The text of a tool result's first content item that is not Idem's replay note: what the tool
 * (or Idem's own answer) said. A replay puts its note first; `replayNoteOf` reads the note.
 */
export function textOf(result: unknown): string {
  const first = storedContentOf(result)[0];
  return first?.type === 'text' ? first.text : '';
}

/** The text of a result's very first content item, whatever it is (where the note stands). */
export function firstTextOf(result: unknown): string {
  const first = ((result as CallToolResult).content ?? [])[0];
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

/** Idem's replay note: a text item that starts with `[idem]`, before or after the stored content. */
const isReplayNote = (item: CallToolResult['content'][number]) =>
  item.type === 'text' && item.text.startsWith('[idem] Replayed');

/** The text of a replayed result's note, wherever it stands ('' when there is none). */
export function replayNoteOf(result: unknown): string {
  const item = ((result as CallToolResult).content ?? []).find(isReplayNote);
  return item?.type === 'text' ? item.text : '';
}

/** A result's content without Idem's replay note: what the tool itself answered. */
export function storedContentOf(result: unknown): CallToolResult['content'] {
  return ((result as CallToolResult).content ?? []).filter((item) => !isReplayNote(item));
}
