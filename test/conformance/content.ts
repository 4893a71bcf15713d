/** What the fixture's handlers answer with: text content, a one-text result, and tiny media. */
import type { CallToolResult } from '@modelcontextprotocol/server';

export const text = (value: string) => ({ type: 'text' as const, text: value });

/** A tool result of one text block. */
export const done = (value: string): CallToolResult => ({ content: [text(value)] });

/** A 1×1 red PNG. */
export const RED_PIXEL_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
/** Eight samples of 8-bit mono silence at 8 kHz. */
export const SILENT_WAV = 'UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==';
