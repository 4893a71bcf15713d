import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ReplayClass } from './contract.js';

/**
 * A guess at a tool's replay contract from what the upstream publishes: its
 * annotations first, then the verbs in its name, then its description. Only a
 * guess — `idem init` writes it with "guess — confirm", and the start-up hint
 * uses it only to pick an example that reads. It errs towards `review`: a
 * read tool taken for a write is only stale; a write taken for a read runs twice.
 */
export interface ContractGuess {
  replay: ReplayClass;
  /** Why, in a few words, for the comment beside the guess. */
  reason: string;
}

const READ_VERBS = new Set([
  'get',
  'list',
  'search',
  'read',
  'fetch',
  'find',
  'query',
  'describe',
  'show',
  'lookup',
  'view',
  'count',
  'inspect',
  'browse',
  'download',
]);

/** Verbs that change something: one of these anywhere in the name (`get_or_create`) wins over a read verb. */
const WRITE_VERBS = new Set([
  'create',
  'update',
  'delete',
  'remove',
  'set',
  'put',
  'post',
  'patch',
  'send',
  'write',
  'add',
  'insert',
  'upsert',
  'edit',
  'toggle',
  'trigger',
  'run',
  'exec',
  'execute',
  'deploy',
  'charge',
  'pay',
  'transfer',
  'push',
  'merge',
  'move',
  'rename',
  'upload',
  'start',
  'stop',
  'cancel',
  'approve',
  'publish',
  'close',
  'fork',
  'assign',
  'comment',
  'reply',
  'submit',
  'invite',
  'install',
  'restart',
  'kill',
  'commit',
  'archive',
  'enable',
  'disable',
]);

/** The lower-case words of a tool name: `create_or_update_file`, `getUser`, `get-sum`. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** True when the name's first word is a read verb and no word in it writes. */
export function nameSaysReadOnly(name: string): boolean {
  const words = nameWords(name);
  return READ_VERBS.has(words[0] ?? '') && !words.some((word) => WRITE_VERBS.has(word));
}

export function guessContract(tool: Pick<Tool, 'name' | 'description' | 'annotations'>): ContractGuess {
  const hints = tool.annotations;
  if (hints?.readOnlyHint === true)
    return { replay: 'read_only', reason: 'the upstream marks it readOnlyHint' };
  if (
    hints?.readOnlyHint === false ||
    hints?.destructiveHint !== undefined ||
    hints?.idempotentHint !== undefined
  )
    return { replay: 'review', reason: 'the upstream marks it as having effects' };
  const words = nameWords(tool.name);
  const writes = words.find((word) => WRITE_VERBS.has(word));
  if (writes) return { replay: 'review', reason: `its name says "${writes}"` };
  if (READ_VERBS.has(words[0] ?? ''))
    return { replay: 'read_only', reason: `its name starts with "${words[0]}"` };
  const description = nameWords(tool.description ?? '');
  const describedWrite = description.slice(0, 3).find((word) => WRITE_VERBS.has(word.replace(/s$/, '')));
  if (describedWrite) return { replay: 'review', reason: `its description says "${describedWrite}"` };
  const describedRead = description.slice(0, 3).find((word) => READ_VERBS.has(word.replace(/s$/, '')));
  if (describedRead) return { replay: 'read_only', reason: `its description says "${describedRead}"` };
  return { replay: 'review', reason: 'nothing says it only reads' };
}
