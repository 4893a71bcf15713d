import { quote } from 'shell-quote';
import { InvalidInputError } from '../../errors.js';

/**
 * `{{name}}` is a placeholder. Double braces because single ones are ordinary shell
 * (`${VAR}`, brace expansion, `find -exec {} +`) and must stay usable in a template.
 */
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** The longest command sent: far below sshd's packet limit, and no real action needs more. */
export const MAX_COMMAND_BYTES = 64 * 1024;

/**
 * A shell command with placeholders for a tool's arguments. The template is the
 * operator's (trusted) text; every argument is inserted as ONE shell word,
 * quoted by shell-quote's `quote`, so that no argument can add a command,
 * a substitution, a redirection or another word. What quoting cannot carry
 * (a NUL byte ends a C string; an object has no one word) is refused before
 * anything is sent.
 */
export class CommandTemplate {
  readonly placeholders: readonly string[];
  readonly #parts: readonly (string | { name: string })[];

  constructor(readonly template: string) {
    if (template.trim() === '') throw new Error('command template is empty');
    if (template.includes('\0')) throw new Error('command template contains a NUL byte');
    const parts: (string | { name: string })[] = [];
    let last = 0;
    for (const match of template.matchAll(PLACEHOLDER)) {
      parts.push(template.slice(last, match.index), { name: match[1] as string });
      last = match.index + match[0].length;
    }
    parts.push(template.slice(last));
    const literal = parts.filter((p): p is string => typeof p === 'string').join('');
    // A stray `{{` is almost always a mistyped placeholder, which would otherwise run as literal text.
    if (literal.includes('{{') || literal.includes('}}')) {
      throw new Error(
        `command template has a "{{" or "}}" that is not a placeholder like {{name}}: ${template}`,
      );
    }
    checkPlaceholderContexts(parts);
    this.#parts = parts;
    this.placeholders = [...new Set(parts.flatMap((p) => (typeof p === 'string' ? [] : [p.name])))];
  }

  /** The command with each placeholder replaced by its argument as one quoted shell word. Throws InvalidInputError. */
  render(args: Readonly<Record<string, unknown>>): string {
    const command = this.#parts
      .map((part) => (typeof part === 'string' ? part : shellWord(part.name, args[part.name])))
      .join('');
    if (Buffer.byteLength(command) > MAX_COMMAND_BYTES) {
      throw new InvalidInputError('too_large', '', `the command is longer than ${MAX_COMMAND_BYTES} bytes`);
    }
    return command;
  }
}

function shellWord(name: string, value: unknown): string {
  if (value === undefined || value === null) {
    throw new InvalidInputError('missing_argument', name, `the command needs argument "${name}"`);
  }
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'boolean') text = String(value);
  else if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else {
    throw new InvalidInputError(
      'unsafe_argument',
      name,
      'only a string, a finite number or a boolean can be put into a command',
    );
  }
  if (text.includes('\0')) {
    throw new InvalidInputError('unsafe_argument', name, 'a NUL byte cannot be passed in a command');
  }
  return quote([text]);
}

/**
 * A quoted word is one word only where the shell reads it as code: inside quotes
 * the quotes of the word would close the template's own (`'{{v}}'` makes
 * `''x; reboot''`), inside backticks one level of backslashes is undone, in a
 * comment a newline in the value ends the comment, after a backslash the first
 * character is taken literally, and in a here-document quotes mean nothing.
 * So a placeholder must stand where a bare word could, or the template is refused.
 * (Inside `$(…)` quoting starts afresh: a bare placeholder there is fine.)
 */
function checkPlaceholderContexts(parts: readonly (string | { name: string })[]): void {
  let single = false;
  let double = false;
  let backtick = false;
  let comment = false;
  let escaped = false;
  let heredoc = false;
  let wordStart = true;
  for (const part of parts) {
    if (typeof part !== 'string') {
      const where = single
        ? 'single quotes'
        : double
          ? 'double quotes'
          : backtick
            ? 'backticks'
            : comment
              ? 'a comment'
              : escaped
                ? 'a backslash escape'
                : heredoc
                  ? 'a here-document (or after <<)'
                  : undefined;
      if (where) {
        throw new Error(
          `command template: {{${part.name}}} is inside ${where}; write it bare — each argument is ` +
            'already inserted as one quoted shell word',
        );
      }
      wordStart = false;
      continue;
    }
    for (let i = 0; i < part.length; i++) {
      const ch = part[i] as string;
      if (comment) {
        if (ch === '\n') {
          comment = false;
          wordStart = true;
        }
      } else if (escaped) {
        escaped = false;
        wordStart = false;
      } else if (single) {
        if (ch === "'") single = false;
      } else if (ch === '\\') {
        escaped = true;
      } else if (double) {
        if (ch === '"') double = false;
        else if (ch === '`') backtick = !backtick;
      } else if (ch === "'") {
        single = true;
        wordStart = false;
      } else if (ch === '"') {
        double = true;
        wordStart = false;
      } else if (ch === '`') {
        backtick = !backtick;
        wordStart = true;
      } else if (ch === '#' && wordStart) {
        comment = true;
      } else {
        if (ch === '<' && part[i + 1] === '<') heredoc = true;
        wordStart = /[\s;&|()<>]/.test(ch);
      }
    }
  }
}
