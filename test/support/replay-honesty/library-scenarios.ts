/**
 * The rows run in the library's world (library-world.ts): the demo's
 * lost-response scenarios (the staleness harness's, with the delays real
 * clients use), the traps with real overlap (calls held at the
 * processor, so two are in flight at once), and the deliberate repeats the
 * gateway's community servers have no way to show: a toggle, a counter, a
 * read. Time is the injected clock; every wait is on a condition.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { waitUntil } from '../wait.js';
import { Agent, type AnswerLog, firstText } from './agent.js';
import type { LibraryWorld } from './library-world.js';
import type { Outcome, Suite } from './outcome.js';

export interface LibraryScenario {
  id: string;
  suite: Suite;
  world: 'library';
  name: string;
  /** Set where no signal the gateway observes can tell this case from its twin: the rule's known limit. */
  limit?: string;
  run(world: LibraryWorld, log: AnswerLog): Promise<Outcome>;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const CARD = '4242424242424242';

const charge = (order: string) => ({ order_id: order, amount_cents: 1999, card_number: CARD });

/** Every action of a lost-response row is meant to run once; the processor counts charges (all orders). */
function charges(world: LibraryWorld, orders: string[]): Outcome {
  return {
    kind: 'effects',
    counted: { charges: world.processor.charges },
    expected: { charges: orders.length },
  };
}

/** The answer lost, the very same request re-sent (a fetch retry wrapper) `delayMs` later. */
function resent(delayMs: number, when: string): LibraryScenario {
  return {
    id: `lib-resend-${when}`,
    suite: 'lost_response',
    world: 'library',
    name: `answer lost, same request re-sent after ${when}`,
    async run(world, log) {
      const agent = await Agent.connect(world.url, log);
      await agent.callResending('charge_card', charge('A'), () => world.clock.advance(delayMs));
      await agent.close();
      return charges(world, ['A']);
    },
  };
}

/** The answer lost (transport error), the agent calls again `delayMs` later: new request id. */
function calledAgain(session: 'new' | 'same', delayMs: number, when: string): LibraryScenario {
  return {
    id: `lib-again-${session}-${when}`,
    suite: 'lost_response',
    world: 'library',
    name: `answer lost, agent calls again after ${when}, ${session === 'new' ? 'new session' : 'same session'}`,
    async run(world, log) {
      const agent = await Agent.connect(world.url, log);
      await agent.callLosingAnswer('charge_card', charge('A'));
      world.clock.advance(delayMs);
      const again = session === 'new' ? await Agent.connect(world.url, log) : agent;
      await again.call('charge_card', charge('A'));
      await again.close();
      await agent.close();
      return charges(world, ['A']);
    },
  };
}

const timedOut: LibraryScenario = {
  id: 'lib-timeout',
  suite: 'lost_response',
  world: 'library',
  name: 'agent timed out, calls again after 60s (same session)',
  async run(world, log) {
    // The staleness harness's scenario: the agent gives up while the processor holds the charge, so
    // its request is cancelled after dispatch; the charge completes with no caller.
    const { processor } = world;
    const release = processor.holdCharges();
    const agent = await Agent.connect(world.url, log);
    const abort = new AbortController();
    const first = agent.call('charge_card', charge('A'), abort.signal).catch(() => undefined);
    await waitUntil('the charge to reach the processor', () => processor.requests === 1);
    abort.abort('request timed out');
    await first;
    await waitUntil('the server to hear the cancellation', () => world.cancelled.count === 1);
    release();
    await processor.chargesReach(1);
    await waitUntil('the charge to be recorded', async () =>
      (await world.store.list({ tool: 'charge_card' })).every((r) => r.state === 'completed'),
    );
    world.clock.advance(60 * SECOND);
    await agent.call('charge_card', charge('A'));
    await agent.close();
    return charges(world, ['A']);
  },
};

const atOnce: LibraryScenario = {
  id: 'lib-concurrent',
  suite: 'lost_response',
  world: 'library',
  name: 'two identical calls at once (two sessions)',
  async run(world, log) {
    const { processor } = world;
    const release = processor.holdCharges();
    const [a, b] = await Promise.all([Agent.connect(world.url, log), Agent.connect(world.url, log)]);
    const calls = [a.call('charge_card', charge('A')), b.call('charge_card', charge('A'))];
    let answered = false;
    for (const call of calls) void call.finally(() => (answered = true)).catch(() => {});
    await waitUntil('one answer or two charges', () => answered || processor.requests === 2);
    release();
    await Promise.all(calls);
    await Promise.all([a.close(), b.close()]);
    return charges(world, ['A']);
  },
};

/**
 * Trap (a): one model turn sends A and B at once (both reach the processor before either is
 * answered); A's answer is lost. The next turn sends the retry of A beside a new call C, both in
 * flight: C is held at the processor until the retry has been answered (or has reached the
 * processor itself), so C cannot have completed before the retry arrived.
 */
const parallelTurns: LibraryScenario = {
  id: 'lib-trap-a',
  suite: 'lost_response',
  world: 'library',
  name: 'trap (a): turn [A, B] in flight at once, A lost; next turn [retry A, new C] in flight at once',
  async run(world, log) {
    const { processor } = world;
    const agent = await Agent.connect(world.url, log);
    let release = processor.holdCharges();
    const lost = agent.callLosingAnswer('charge_card', charge('A'));
    const b = agent.call('charge_card', charge('B'));
    await waitUntil('A and B at the processor', () => processor.requests === 2);
    release();
    await Promise.all([lost, b]);

    release = processor.holdCharges();
    let retried = false;
    const retry = agent.call('charge_card', charge('A')).finally(() => (retried = true));
    const c = agent.call('charge_card', charge('C'));
    // C and the retry at the processor (the retry ran again), or C there and the retry answered.
    await waitUntil(
      'the retry to arrive while C is held',
      () => processor.requests === 4 || (retried && processor.requests === 3),
    );
    release();
    await Promise.all([retry, c]);
    await agent.close();
    return charges(world, ['A', 'B', 'C']);
  },
};

/** Trap (a), the host running the next turn's calls one after another, the new call first. */
const parallelTurnNewFirst: LibraryScenario = {
  id: 'lib-trap-a-new-first',
  suite: 'lost_response',
  world: 'library',
  name: "trap (a'): turn [A, B] in flight at once, A lost; next turn runs C, then the retry of A",
  limit: 'to the gateway this is (c): C started after the lost answer and completed before the retry arrived',
  async run(world, log) {
    const { processor } = world;
    const agent = await Agent.connect(world.url, log);
    const release = processor.holdCharges();
    const lost = agent.callLosingAnswer('charge_card', charge('A'));
    const b = agent.call('charge_card', charge('B'));
    await waitUntil('A and B at the processor', () => processor.requests === 2);
    release();
    await Promise.all([lost, b]);
    await agent.call('charge_card', charge('C'));
    await agent.call('charge_card', charge('A'));
    await agent.close();
    return charges(world, ['A', 'B', 'C']);
  },
};

/** Trap (b): X answered, Y's answer lost, the agent restarts (new session) and re-runs its plan. */
const restartedPlan: LibraryScenario = {
  id: 'lib-trap-b',
  suite: 'lost_response',
  world: 'library',
  name: 'trap (b): X answered, Y lost, agent restarts (new session), X again, Y again',
  async run(world, log) {
    const first = await Agent.connect(world.url, log);
    await first.call('charge_card', charge('X'));
    await first.callLosingAnswer('charge_card', charge('Y'));
    await first.close();
    world.clock.advance(10 * SECOND); // Kubernetes' first restart back-off
    const restarted = await Agent.connect(world.url, log);
    await restarted.call('charge_card', charge('X'));
    await restarted.call('charge_card', charge('Y'));
    await restarted.close();
    return charges(world, ['X', 'Y']);
  },
};

/** Trap (c): A's answer lost inside a live session; the agent goes on with B, then retries A. */
const lostThenOther: LibraryScenario = {
  id: 'lib-trap-c',
  suite: 'lost_response',
  world: 'library',
  name: 'trap (c): A lost in a live session, then B (effects), then the retry of A',
  limit:
    'a retry after another completed call with effects in the same session reads as a deliberate repeat: the answer the agent never got was written, so it counts as given',
  async run(world, log) {
    const agent = await Agent.connect(world.url, log);
    await agent.callLosingAnswer('charge_card', charge('A'));
    await agent.call('charge_card', charge('B'));
    world.clock.advance(SECOND);
    await agent.call('charge_card', charge('A'));
    await agent.close();
    return charges(world, ['A', 'B']);
  },
};

/** A read: the answer is as meant when it tells the time now (the clock moved `SECOND * 10` since). */
function readAgain(between: 'nothing' | 'a charge'): LibraryScenario {
  return {
    id: `lib-read-${between === 'nothing' ? 'twice' : 'moved-on'}`,
    suite: 'deliberate_repeat',
    world: 'library',
    name: `get_time, ${between === 'nothing' ? '' : 'a charge, '}get_time again 10s later`,
    ...(between === 'nothing'
      ? { limit: 'nothing observable happened between the two calls: the same as a retry' }
      : {}),
    async run(world, log) {
      const agent = await Agent.connect(world.url, log);
      await agent.call('get_time');
      world.clock.advance(10 * SECOND);
      if (between === 'a charge') await agent.call('charge_card', charge('A'));
      const probe = await agent.call('get_time');
      await agent.close();
      const now = new Date(world.clock.now()).toISOString();
      return { kind: 'repeat', asIntended: firstText(stored(probe)) === now, probe, truth: `now ${now}` };
    },
  };
}

/** The light toggled twice: it must be off again (an even number of toggles reached the far side). */
function toggleTwice(between: 'nothing' | 'a charge'): LibraryScenario {
  return {
    id: `lib-toggle-${between === 'nothing' ? 'twice' : 'moved-on'}`,
    suite: 'deliberate_repeat',
    world: 'library',
    name: `toggle_light, ${between === 'nothing' ? '' : 'a charge, '}toggle_light again`,
    ...(between === 'nothing'
      ? { limit: 'nothing observable happened between the two calls: the same as a retry' }
      : {}),
    async run(world, log) {
      const agent = await Agent.connect(world.url, log);
      await agent.call('toggle_light');
      world.clock.advance(SECOND);
      if (between === 'a charge') await agent.call('charge_card', charge('A'));
      const probe = await agent.call('toggle_light');
      await agent.close();
      const toggles = world.counter.count('light');
      return { kind: 'repeat', asIntended: toggles === 2, probe, truth: `${toggles} toggles arrived` };
    },
  };
}

const counterTwice: LibraryScenario = {
  id: 'lib-counter-twice',
  suite: 'deliberate_repeat',
  world: 'library',
  name: 'add_one, add_one again (nothing between)',
  limit: 'nothing observable happened between the two calls: the same as a retry',
  async run(world, log) {
    const agent = await Agent.connect(world.url, log);
    await agent.call('add_one', { counter: 'visits' });
    world.clock.advance(SECOND);
    const probe = await agent.call('add_one', { counter: 'visits' });
    await agent.close();
    const n = world.counter.count('counter-visits');
    return { kind: 'repeat', asIntended: n === 2, probe, truth: `counter at ${n}` };
  },
};

/** The result as stored: without the replay note wherever it was put. */
function stored(result: CallToolResult): CallToolResult {
  return {
    ...result,
    content: result.content.filter((c) => !(c.type === 'text' && c.text.startsWith('[idem]'))),
  };
}

export const LIBRARY_SCENARIOS: readonly LibraryScenario[] = [
  resent(1 * SECOND, '1s'),
  resent(255 * SECOND, '4m15s'),
  calledAgain('new', 1 * SECOND, '1s'),
  calledAgain('new', 60 * SECOND, '60s'),
  calledAgain('new', 5 * MINUTE, '5m'),
  calledAgain('same', 1 * SECOND, '1s'),
  calledAgain('same', 60 * SECOND, '60s'),
  timedOut,
  atOnce,
  parallelTurns,
  parallelTurnNewFirst,
  restartedPlan,
  lostThenOther,
  readAgain('nothing'),
  readAgain('a charge'),
  toggleTwice('nothing'),
  toggleTwice('a charge'),
  counterTwice,
];
