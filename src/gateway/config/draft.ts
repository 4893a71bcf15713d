import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { guessContract } from '../../contracts/guess.js';

export interface DraftUpstream {
  name: string;
  command: string;
  args: readonly string[];
}

/** A YAML key as written: bare when plain, else JSON-quoted (valid YAML). */
function key(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name) ? name : JSON.stringify(name);
}

/** A description as one comment line: no line breaks a reader (or YAML) could mistake for config. */
function commentText(text: string, max = 100): string {
  const line = text
    .replace(/[\p{Cc}\u2028\u2029]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * The config `idem init` writes for one server: the server as its upstream,
 * and under `tools:` a contract per tool it lists, each a guess (from its
 * annotations, name and description) marked "guess — confirm" with the
 * reason. Guesses err towards review (docs/contracts.md): a read taken for a
 * write is only stale; a write taken for a read would run twice. The header
 * says what clients will see (contracts/annotations.ts): no contract makes a
 * tool idempotent, so no line here promises it.
 */
export function draftConfig(upstream: DraftUpstream, tools: readonly Tool[]): string {
  const lines = [
    `# Written by \`idem init\` from the ${tools.length} tool${tools.length === 1 ? '' : 's'} that ${upstream.name} lists.`,
    '# Every contract under tools: is a guess — confirm each one (or change it) before you rely on it:',
    '#   read_only  only reads: runs every time, never replayed',
    '#   review     has effects: an identical call within attach_window gets the stored result (a replay);',
    '#              an unknown outcome waits for an operator (idem executions resolve)',
    '#   keyed      has effects, and the server honours the idempotency key Idem sends (_meta)',
    "# Published annotations follow one rule, whichever contract you pick: a read_only tool keeps the server's own;",
    "# any other is published readOnlyHint: false with the server's own idempotentHint (none given: false).",
    '# docs/contracts.md explains each; `idem lint --config <this file>` checks it;',
    '# `idem gateway --config <this file>` serves it.',
    'upstreams:',
    `  ${key(upstream.name)}:`,
    `    command: ${JSON.stringify(upstream.command)}`,
    `    args: ${JSON.stringify(upstream.args)}`,
  ];
  if (tools.length === 0) {
    lines.push('# The server listed no tools.', 'tools: {}');
    return `${lines.join('\n')}\n`;
  }
  lines.push('tools:');
  for (const tool of tools) {
    const guess = guessContract(tool);
    if (tool.description) lines.push(`  # ${commentText(tool.description)}`);
    lines.push(
      `  ${key(tool.name)}: { replay: ${guess.replay} } # guess — confirm: ${commentText(guess.reason)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
