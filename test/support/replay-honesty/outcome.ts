/**
 * What one scenario under one rule came to, and how it is judged. A
 * lost-response row counts effects at the far side against what was meant
 * (every action once); a deliberate-repeat row reads the world afterwards (the
 * file, the graph, the far side's counter) and asks whether it is as the
 * agent's calls meant it: if not, and the answer to the repeat was a replay,
 * that answer was stale.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AnswerLog } from './agent.js';

export type Suite = 'lost_response' | 'deliberate_repeat';

/** What a scenario observed, before judging. */
export type Outcome =
  | {
      kind: 'effects';
      /** Per action: how often it reached the far side. */
      counted: Record<string, number>;
      /** Per action: how often it was meant to (1 each in a lost-response row). */
      expected: Record<string, number>;
    }
  | {
      kind: 'repeat';
      /** The world afterwards is what the agent's calls meant it to be. */
      asIntended: boolean;
      /** The answer to the deliberate repeat (the call whose answer may be stale). */
      probe: CallToolResult;
      /** What was read from the world, for the reader. */
      truth: string;
    };

export interface CellResult {
  /** Lost-response rows: effects that reached the far side, and how many were meant. */
  counted: number;
  expected: number;
  /** Extra runs of actions meant to run once (an action run twice counts 1). */
  duplicates: number;
  /** Actions meant to run that never did. */
  missing: number;
  /** Deliberate-repeat rows: the answer to the repeat was a replay and the world is not as meant. */
  stale: boolean;
  /** …and its first text item was the replay note (not the stored content). */
  staleNoteFirst: boolean;
  /** Deliberate-repeat rows: the world is not as meant, yet the answer was not a replay. */
  wrong: boolean;
  /** Every replayed answer of the cell, and those whose first text item is the note. */
  replays: number;
  replaysNoteFirst: number;
  truth: string;
  saw: string[];
  ms: number;
}

export function judge(outcome: Outcome, log: AnswerLog, ms: number): CellResult {
  const replays = log.replays;
  const base = {
    replays: replays.length,
    replaysNoteFirst: replays.filter((a) => a.noteFirst).length,
    saw: log.saw,
    ms,
  };
  if (outcome.kind === 'effects') {
    let counted = 0;
    let expected = 0;
    let duplicates = 0;
    let missing = 0;
    for (const [action, meant] of Object.entries(outcome.expected)) {
      const n = outcome.counted[action] ?? 0;
      counted += n;
      expected += meant;
      duplicates += Math.max(0, n - meant);
      missing += Math.max(0, meant - n);
    }
    const truth = Object.entries(outcome.counted)
      .map(([action, n]) => `${action}×${n}`)
      .join(' ');
    return {
      ...base,
      counted,
      expected,
      duplicates,
      missing,
      stale: false,
      staleNoteFirst: false,
      wrong: false,
      truth,
    };
  }
  const replayed = outcome.probe._meta?.['io.idem/replayed'] === true;
  const probe = log.answers.find((a) => a.result === outcome.probe);
  const stale = !outcome.asIntended && replayed;
  return {
    ...base,
    counted: 0,
    expected: 0,
    duplicates: 0,
    missing: 0,
    stale,
    staleNoteFirst: stale && (probe?.noteFirst ?? false),
    wrong: !outcome.asIntended && !replayed,
    truth: outcome.truth,
  };
}
