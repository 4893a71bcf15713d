/**
 * The rows run through a real gateway process in front of the published
 * filesystem and memory servers (gateway-world.ts).
 *
 * Lost-response rows count effects in a file: each action is an `edit_file`
 * that puts its own line before the line `END` of log.txt, so an action run
 * twice leaves its line twice. The calls of one model turn reach the gateway in
 * a fixed order (each waits for the one before): the engine sees an order of
 * arrivals and completions, and a race between two real calls would decide the
 * cell by chance. Each row names the order it uses; where the order matters to
 * a rule, both are rows.
 *
 * Deliberate-repeat rows read the world afterwards: the file's content, the
 * graph's entities.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, type AnswerLog } from './agent.js';
import { entityNames, type GatewayWorld, type ServerKind } from './gateway-world.js';
import type { Outcome, Suite } from './outcome.js';

export interface GatewayScenario {
  id: string;
  suite: Suite;
  world: ServerKind;
  /** stdio: each agent session starts its own `idem gateway` on stdio (default: one gateway on HTTP). */
  front?: 'stdio';
  name: string;
  /** Set where no signal the gateway observes can tell this case from its twin: the rule's known limit. */
  limit?: string;
  run(world: GatewayWorld, log: AnswerLog): Promise<Outcome>;
}

// --- the filesystem server: effects as lines of log.txt ---

const logFile = (world: GatewayWorld) => join(world.root, 'log.txt');

/** The edit_file call that is action `name`: its line goes in before END. */
export function appendLine(world: GatewayWorld, name: string) {
  return { path: logFile(world), edits: [{ oldText: 'END', newText: `${name}\nEND` }] };
}

function startLog(world: GatewayWorld): void {
  writeFileSync(logFile(world), 'END\n');
}

/** How often each action's line is in log.txt. */
export function linesOf(world: GatewayWorld, names: string[]): Record<string, number> {
  const lines = readFileSync(logFile(world), 'utf8').split('\n');
  return Object.fromEntries(names.map((name) => [name, lines.filter((l) => l === name).length]));
}

function once(world: GatewayWorld, names: string[]): Outcome {
  return {
    kind: 'effects',
    counted: linesOf(world, names),
    expected: Object.fromEntries(names.map((n) => [n, 1])),
  };
}

function lostRow(
  id: string,
  name: string,
  actions: string[],
  steps: (world: GatewayWorld, log: AnswerLog) => Promise<void>,
  limit?: string,
): GatewayScenario {
  return {
    id,
    suite: 'lost_response',
    world: 'filesystem',
    name,
    ...(limit ? { limit } : {}),
    async run(world, log) {
      startLog(world);
      await steps(world, log);
      return once(world, actions);
    },
  };
}

const LOST_TO_C =
  'to the gateway this is (c): C started after the lost answer and completed before the retry arrived';

export const fsResend = lostRow(
  'gw-fs-resend',
  'answer lost, same request re-sent',
  ['a'],
  async (w, log) => {
    const agent = await Agent.connect(w.url, log);
    await agent.callResending('edit_file', appendLine(w, 'a'));
    await agent.close();
  },
);

export const fsAgainNewSession = lostRow(
  'gw-fs-again-new',
  'answer lost, agent calls again, new session',
  ['a'],
  async (w, log) => {
    const agent = await Agent.connect(w.url, log);
    await agent.callLosingAnswer('edit_file', appendLine(w, 'a'));
    await agent.close();
    const again = await Agent.connect(w.url, log);
    await again.call('edit_file', appendLine(w, 'a'));
    await again.close();
  },
);

export const fsAgainSameSession = lostRow(
  'gw-fs-again-same',
  'answer lost, agent calls again, same session',
  ['a'],
  async (w, log) => {
    const agent = await Agent.connect(w.url, log);
    await agent.callLosingAnswer('edit_file', appendLine(w, 'a'));
    await agent.call('edit_file', appendLine(w, 'a'));
    await agent.close();
  },
);

/** Between the lost answer and the retry, the agent only reads: nothing moved on. */
export const fsLostReadRetry = lostRow(
  'gw-fs-lost-read-retry',
  'A lost in a live session, then a read (read_text_file), then the retry of A',
  ['a'],
  async (w, log) => {
    const agent = await Agent.connect(w.url, log);
    await agent.callLosingAnswer('edit_file', appendLine(w, 'a'));
    await agent.call('read_text_file', { path: logFile(w) });
    await agent.call('edit_file', appendLine(w, 'a'));
    await agent.close();
  },
);

/** Between the lost answer and the retry, a call with effects that the target refused (nothing took effect). */
export const fsLostFailureRetry = lostRow(
  'gw-fs-lost-failure-retry',
  'A lost in a live session, then B refused by the server (ENOENT), then the retry of A',
  ['a'],
  async (w, log) => {
    const agent = await Agent.connect(w.url, log);
    await agent.callLosingAnswer('edit_file', appendLine(w, 'a'));
    const refused = await agent.call('edit_file', {
      path: join(w.root, 'missing.txt'),
      edits: [{ oldText: 'x', newText: 'y' }],
    });
    if (!refused.isError) throw new Error('edit_file on a missing file did not fail');
    await agent.call('edit_file', appendLine(w, 'a'));
    await agent.close();
  },
);

/** Trap (a): turn 1 [A, B] reaches the gateway B first, then A (lost); turn 2 [retry A, C], the retry first. */
export const fsTrapA = lostRow(
  'gw-fs-trap-a',
  'trap (a): turn [A, B] (B reaches the gateway first), A lost; next turn [retry A, new C], the retry first',
  ['a', 'b', 'c'],
  async (w, log) => {
    const agent = await Agent.connect(w.url, log);
    await agent.call('edit_file', appendLine(w, 'b'));
    await agent.callLosingAnswer('edit_file', appendLine(w, 'a'));
    await agent.call('edit_file', appendLine(w, 'a'));
    await agent.call('edit_file', appendLine(w, 'c'));
    await agent.close();
  },
);

export const fsTrapANewFirst = lostRow(
  'gw-fs-trap-a-new-first',
  "trap (a'): turn [A, B] (B first), A lost; next turn [retry A, new C], C first",
  ['a', 'b', 'c'],
  async (w, log) => {
    const agent = await Agent.connect(w.url, log);
    await agent.call('edit_file', appendLine(w, 'b'));
    await agent.callLosingAnswer('edit_file', appendLine(w, 'a'));
    await agent.call('edit_file', appendLine(w, 'c'));
    await agent.call('edit_file', appendLine(w, 'a'));
    await agent.close();
  },
  LOST_TO_C,
);

/** Trap (b): X answered, Y's answer lost, the agent restarts (new session) and re-runs its plan from the top. */
export const fsTrapB = lostRow(
  'gw-fs-trap-b',
  'trap (b): X answered, Y lost, agent restarts (new session), X again, Y again',
  ['x', 'y'],
  async (w, log) => {
    const first = await Agent.connect(w.url, log);
    await first.call('edit_file', appendLine(w, 'x'));
    await first.callLosingAnswer('edit_file', appendLine(w, 'y'));
    await first.close();
    const restarted = await Agent.connect(w.url, log);
    await restarted.call('edit_file', appendLine(w, 'x'));
    await restarted.call('edit_file', appendLine(w, 'y'));
    await restarted.close();
  },
);

/**
 * Trap (b) as a desktop client lives it: the gateway on stdio, started by the agent; the agent dies
 * as Y's answer arrives, and its restart starts a new gateway process on the same data directory.
 */
export const fsTrapBStdio: GatewayScenario = {
  ...lostRow(
    'gw-fs-trap-b-stdio',
    'trap (b) over stdio: X answered, agent dies as Y is answered; restarted (new gateway process), X, Y',
    ['x', 'y'],
    async (w, log) => {
      const first = await Agent.connectStdio(w.stdio, log);
      await first.call('edit_file', appendLine(w, 'x'));
      await first.callDyingOnAnswer('edit_file', appendLine(w, 'y'));
      const restarted = await Agent.connectStdio(w.stdio, log);
      await restarted.call('edit_file', appendLine(w, 'x'));
      await restarted.call('edit_file', appendLine(w, 'y'));
      await restarted.close();
    },
  ),
  front: 'stdio',
};

export const fsTrapC = lostRow(
  'gw-fs-trap-c',
  'trap (c): A lost in a live session, then B (effects), then the retry of A',
  ['a', 'b'],
  async (w, log) => {
    const agent = await Agent.connect(w.url, log);
    await agent.callLosingAnswer('edit_file', appendLine(w, 'a'));
    await agent.call('edit_file', appendLine(w, 'b'));
    await agent.call('edit_file', appendLine(w, 'a'));
    await agent.close();
  },
  'a retry after another completed call with effects in the same session reads as a deliberate repeat: the answer the agent never got was written, so it counts as given',
);

// --- deliberate repeats ---

const read = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '(missing)';
  }
};

/** Item 2: edit_file on a missing file fails; write_file creates it; the same edit_file must now succeed. */
export const fsEditAfterEnoent: GatewayScenario = {
  id: 'gw-fs-enoent',
  suite: 'deliberate_repeat',
  world: 'filesystem',
  name: 'edit_file on a missing file (ENOENT), write_file creates it, the same edit_file again',
  async run(world, log) {
    const notes = join(world.root, 'notes.txt');
    const edit = { path: notes, edits: [{ oldText: 'draft', newText: 'final' }] };
    const agent = await Agent.connect(world.url, log);
    const failed = await agent.call('edit_file', edit);
    if (!failed.isError) throw new Error('edit_file on a missing file did not fail');
    await agent.call('write_file', { path: notes, content: 'draft\n' });
    const probe = await agent.call('edit_file', edit);
    await agent.close();
    const text = read(notes);
    return { kind: 'repeat', asIntended: text === 'final\n', probe, truth: JSON.stringify(text) };
  },
};

/**
 * write_file v1, v2, v1. `new`: the agent restarts after v1 (a new session) and writes v2 and v1
 * there. `replayed`: the restarted agent first re-runs v1 (replayed: the retry of trap b), then
 * writes v2, then v1 again.
 */
function writeBack(session: 'same' | 'new' | 'replayed'): GatewayScenario {
  const names = {
    same: 'write_file v1, v2, v1 again',
    new: 'write_file v1; agent restarts (new session); v2, v1 again',
    replayed: 'write_file v1; agent restarts (new session); v1 again (replayed), v2, v1 again',
  };
  return {
    id: { same: 'gw-fs-v1v2v1', new: 'gw-fs-v1v2v1-new-session', replayed: 'gw-fs-v1v2v1-replayed' }[session],
    suite: 'deliberate_repeat',
    world: 'filesystem',
    name: names[session],
    ...(session === 'new'
      ? {
          limit:
            'the repeated call was answered in another session than the repeat, and never in this one: across sessions a repeat is a retry (trap b)',
        }
      : {}),
    async run(world, log) {
      const doc = join(world.root, 'doc.txt');
      const v1 = { path: doc, content: 'v1\n' };
      let agent = await Agent.connect(world.url, log);
      await agent.call('write_file', v1);
      if (session !== 'same') {
        await agent.close();
        agent = await Agent.connect(world.url, log);
      }
      if (session === 'replayed') await agent.call('write_file', v1);
      await agent.call('write_file', { path: doc, content: 'v2\n' });
      const probe = await agent.call('write_file', v1);
      await agent.close();
      const text = read(doc);
      return { kind: 'repeat', asIntended: text === 'v1\n', probe, truth: JSON.stringify(text) };
    },
  };
}

export const fsWriteBack = writeBack('same');
export const fsWriteBackNewSession = writeBack('new');
export const fsWriteBackReplayed = writeBack('replayed');

export const fsCounter: GatewayScenario = {
  id: 'gw-fs-counter',
  suite: 'deliberate_repeat',
  world: 'filesystem',
  name: 'edit_file adding a line, the same edit again (nothing between)',
  limit: 'nothing observable happened between the two calls: the same as a retry',
  async run(world, log) {
    startLog(world);
    const agent = await Agent.connect(world.url, log);
    await agent.call('edit_file', appendLine(world, 'tick'));
    const probe = await agent.call('edit_file', appendLine(world, 'tick'));
    await agent.close();
    const n = linesOf(world, ['tick']).tick;
    return { kind: 'repeat', asIntended: n === 2, probe, truth: `${n} lines` };
  },
};

// --- the memory server ---

const entity = (name: string) => ({ entities: [{ name, entityType: 'thing', observations: [] }] });

/** Item 3: create_entities X, delete_entities X, create_entities X: X must exist. */
export const memCreateDeleteCreate: GatewayScenario = {
  id: 'gw-mem-cdc',
  suite: 'deliberate_repeat',
  world: 'memory',
  name: 'create_entities X, delete_entities X, create_entities X again',
  async run(world, log) {
    const agent = await Agent.connect(world.url, log);
    await agent.call('create_entities', entity('X'));
    await agent.call('delete_entities', { entityNames: ['X'] });
    const probe = await agent.call('create_entities', entity('X'));
    await agent.close();
    const names = entityNames(world);
    return {
      kind: 'repeat',
      asIntended: names.includes('X'),
      probe,
      truth: `entities [${names.join(', ')}]`,
    };
  },
};

/** Parallel calls of one model turn, then a repeat of one of them in a later turn, after another call. */
export const memParallelTurn: GatewayScenario = {
  id: 'gw-mem-parallel',
  suite: 'deliberate_repeat',
  world: 'memory',
  name: 'turn [create X, create Y] at once; delete X; create X again',
  async run(world, log) {
    const agent = await Agent.connect(world.url, log);
    // Either order at the gateway leads to the same cell: the delete starts after both answers.
    await Promise.all([
      agent.call('create_entities', entity('X')),
      agent.call('create_entities', entity('Y')),
    ]);
    await agent.call('delete_entities', { entityNames: ['X'] });
    const probe = await agent.call('create_entities', entity('X'));
    await agent.close();
    const names = entityNames(world);
    return {
      kind: 'repeat',
      asIntended: names.includes('X'),
      probe,
      truth: `entities [${names.join(', ')}]`,
    };
  },
};

export const GATEWAY_SCENARIOS: readonly GatewayScenario[] = [
  fsResend,
  fsAgainNewSession,
  fsAgainSameSession,
  fsLostReadRetry,
  fsLostFailureRetry,
  fsTrapA,
  fsTrapANewFirst,
  fsTrapB,
  fsTrapBStdio,
  fsTrapC,
  fsEditAfterEnoent,
  fsWriteBack,
  fsWriteBackNewSession,
  fsWriteBackReplayed,
  fsCounter,
  memCreateDeleteCreate,
  memParallelTurn,
];
