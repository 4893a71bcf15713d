/**
 * Issue 42, items 2 and 3 and the traps of the rule that tells a retry from a
 * deliberate repeat, pinned through a real `idem gateway` process (zero config:
 * what a user who declares nothing gets) in front of the published filesystem
 * and memory servers, driven by the official SDK client. The whole table:
 * npx tsx scripts/replay-honesty.ts (test/support/replay-honesty/).
 *
 * The controls at the end show that the checks can fail: without
 * deduplication a lost answer's retry runs twice, and today's replay rule
 * answers a deliberate repeat with a stale result.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Agent, AnswerLog, firstText } from './support/replay-honesty/agent.js';
import {
  fsEditAfterEnoent,
  fsTrapA,
  fsTrapB,
  fsTrapBStdio,
  fsWriteBack,
  memCreateDeleteCreate,
} from './support/replay-honesty/gateway-scenarios.js';
import { openGatewayWorld } from './support/replay-honesty/gateway-world.js';
import { asBuilt, type CellResult, ruleById, runCell, scenarioById } from './support/replay-honesty/index.js';

const zeroConfig = asBuilt(ruleById('default'));

/** A cell, with what the agent saw in the message when an expectation fails. */
async function cell(rule: Parameters<typeof runCell>[0], scenario: Parameters<typeof runCell>[1]) {
  const result: CellResult = await runCell(rule, scenario);
  return { result, saw: `${scenario.id}: ${result.truth}\n${result.saw.join('\n')}` };
}

describe('a known failure is not the answer to a new request (item 2, server-filesystem)', () => {
  it('edit_file fails on a missing file; once write_file created it, the same edit_file runs and edits it', async () => {
    const { result, saw } = await cell(zeroConfig, fsEditAfterEnoent);
    expect(result.truth, saw).toBe(JSON.stringify('final\n'));
    expect(result.stale, saw).toBe(false);
  });

  it('the same request (same JSON-RPC id) re-sent still gets the stored ENOENT; a new request runs', async () => {
    const world = await openGatewayWorld('filesystem', zeroConfig);
    const log = new AnswerLog();
    try {
      const notes = join(world.root, 'notes.txt');
      const edit = { path: notes, edits: [{ oldText: 'draft', newText: 'final' }] };
      const agent = await Agent.connect(world.url, log);
      // The edit's answer (ENOENT) is lost; meanwhile the file is written; the fetch layer re-sends the edit.
      const resent = await agent.callResending('edit_file', edit, async () => {
        await agent.call('write_file', { path: notes, content: 'draft\n' });
      });
      expect(resent.isError).toBe(true);
      expect(firstText(resent)).toMatch(/ENOENT|no such file/i);
      expect(readFileSync(notes, 'utf8')).toBe('draft\n');

      const again = await agent.call('edit_file', edit);
      await agent.close();
      expect(again.isError ?? false, log.saw.join('\n')).toBe(false);
      expect(again._meta?.['io.idem/replayed']).toBeUndefined();
      expect(readFileSync(notes, 'utf8')).toBe('final\n');
    } finally {
      await world.close();
    }
  });
});

describe('a repeat after the state moved on is a new action (item 3)', () => {
  it('server-filesystem: write_file v1, v2, v1 leaves v1', async () => {
    const { result, saw } = await cell(zeroConfig, fsWriteBack);
    expect(result.truth, saw).toBe(JSON.stringify('v1\n'));
    expect(result.stale, saw).toBe(false);
  });

  it('server-memory: create_entities X, delete_entities X, create_entities X leaves X', async () => {
    const { result, saw } = await cell(zeroConfig, memCreateDeleteCreate);
    expect(result.truth, saw).toContain('X');
    expect(result.stale, saw).toBe(false);
  });
});

describe('no lost answer runs an action twice: the traps', () => {
  it('(a) a turn [A, B] with A’s answer lost, then [retry A, new C]: each once', async () => {
    const { result, saw } = await cell(zeroConfig, fsTrapA);
    expect({ duplicates: result.duplicates, missing: result.missing }, saw).toEqual({
      duplicates: 0,
      missing: 0,
    });
  });

  it('(a) with both calls of each turn in flight at once (the library, calls held at the processor): each once', async () => {
    const { result, saw } = await cell(zeroConfig, scenarioById('lib-trap-a'));
    expect({ duplicates: result.duplicates, missing: result.missing }, saw).toEqual({
      duplicates: 0,
      missing: 0,
    });
  });

  it('(b) X answered, Y lost, the agent restarts and re-runs X and Y: each once', async () => {
    const { result, saw } = await cell(zeroConfig, fsTrapB);
    expect({ duplicates: result.duplicates, missing: result.missing }, saw).toEqual({
      duplicates: 0,
      missing: 0,
    });
    expect(result.replays, saw).toBe(2);
  });

  it('(b) over stdio, as a desktop client runs it: the agent dies as Y is answered, its restart starts a new gateway process; each once', async () => {
    const { result, saw } = await cell(zeroConfig, fsTrapBStdio);
    expect({ duplicates: result.duplicates, missing: result.missing }, saw).toEqual({
      duplicates: 0,
      missing: 0,
    });
  });
});

describe('controls: the checks can fail', () => {
  it('without deduplication (read_only) trap (b) runs X and Y twice', async () => {
    const { result, saw } = await cell(asBuilt(ruleById('read_only')), fsTrapB);
    expect(result.duplicates, saw).toBe(2);
  });

  it('under today’s replay rule, write_file v1, v2, v1 is answered with a stale success', async () => {
    const { result, saw } = await cell(asBuilt(ruleById('today')), fsWriteBack);
    expect(result.truth, saw).toBe(JSON.stringify('v2\n'));
    expect(result.stale, saw).toBe(true);
  });
});
