/**
 * The fixed retry scenarios of `idem probe`, in the order they run. Each drives
 * the target with the official SDK clients and says, per action, how often it
 * was meant to take effect and, per answer, how many effects make it true.
 * The effects themselves are counted afterwards, at the far side.
 */
import { type Answer, connectAgent, type Generation, type ProbeAgent } from './agent.js';
import type { ProbeTarget } from './targets.js';

type Args = Record<string, unknown>;

/** One answer the agent was told, and the number of effects of `key` that make a `done` true. */
export interface Told {
  key: string;
  needs: number;
  answer: Answer;
  /** The effects of `key` counted as the answer arrived: a failure is judged against these. */
  countedThen: number;
}

export interface Observed {
  /** Per action key: how many effects were meant. */
  expected: Record<string, number>;
  told: Told[];
  /** What the reader should know (the revision a client negotiated…). */
  note?: string;
}

export interface ScenarioContext {
  target: ProbeTarget;
  /** The unique key of this run's action `name` in this scenario. */
  key(name: string): string;
  /** A new agent session (closed after the scenario). */
  agent(generation?: Generation): Promise<ProbeAgent>;
  /** What the agent was told about `key`, with the far side's count as it was told. */
  told(key: string, needs: number, answer: Promise<Answer>): Promise<Told>;
}

export interface ProbeScenario {
  id: string;
  name: string;
  /** What the scenario needs of the target beyond calls: the far side's controls, the gateway's restart. */
  needs?: 'controls' | 'gateway-restart';
  /** Opt-in with --kill. */
  kill?: boolean;
  run(ctx: ScenarioContext): Promise<Observed>;
}

/** A call that waits this long at most: a cap for a hung target, not a guess at its speed. */
const CALL_CAP_MS = 30_000;
/** The slow scenario: the tool takes SLOW_MS; the client gives up after CLIENT_TIMEOUT_MS. */
const SLOW_MS = 1_500;
const CLIENT_TIMEOUT_MS = 300;

/**
 * Waits until the held call of `key` started at the far side, or was answered without getting
 * there (a target that refuses it): true in that second case, where there is nothing to kill.
 */
async function startedOrAnswered(
  controls: NonNullable<ProbeTarget['controls']>,
  key: string,
  pending: Promise<Answer>,
): Promise<boolean> {
  let answered = false;
  const stop = new AbortController();
  void pending.then(() => {
    answered = true;
    stop.abort();
  });
  try {
    await controls.started(key, stop.signal);
    return false;
  } catch (error) {
    if (answered) return true;
    throw error;
  }
}

/** One action called once, its answer lost, then called again by `retry`. */
function lostThenRetried(
  id: string,
  name: string,
  generation: Generation,
  retry: (ctx: ScenarioContext, agent: ProbeAgent, args: Args) => Promise<Answer>,
): ProbeScenario {
  return {
    id,
    name,
    async run(ctx) {
      const key = ctx.key('a');
      const args = ctx.target.argsFor(key);
      const agent = await ctx.agent(generation);
      agent.loseNextAnswer('lose', args);
      const first = await ctx.told(key, 1, agent.call(args, { timeoutMs: CALL_CAP_MS }));
      const again = await ctx.told(key, 1, retry(ctx, agent, args));
      return {
        expected: { [key]: 1 },
        told: [first, again],
        ...(generation === 'v2' ? { note: `v2 client at ${agent.protocolVersion}` } : {}),
      };
    },
  };
}

function atOnce(n: number): ProbeScenario {
  return {
    id: `concurrent-${n}`,
    name: `${n === 2 ? 'two' : 'twenty'} identical calls at once`,
    async run(ctx) {
      const key = ctx.key('a');
      const args = ctx.target.argsFor(key);
      const agent = await ctx.agent('v1');
      const told = await Promise.all(
        Array.from({ length: n }, () => ctx.told(key, 1, agent.call(args, { timeoutMs: CALL_CAP_MS }))),
      );
      return { expected: { [key]: 1 }, told };
    },
  };
}

export const SCENARIOS: readonly ProbeScenario[] = [
  {
    id: 'resend',
    name: 'answer lost, the same request resent (same id, same session)',
    async run(ctx) {
      const key = ctx.key('a');
      const args = ctx.target.argsFor(key);
      const agent = await ctx.agent('v1');
      agent.loseNextAnswer('resend', args);
      const answer = await ctx.told(key, 1, agent.call(args, { timeoutMs: CALL_CAP_MS }));
      return { expected: { [key]: 1 }, told: [answer] };
    },
  },
  lostThenRetried(
    'again-same-session',
    'answer lost, a new request (new id, same session)',
    'v1',
    (_ctx, agent, args) => agent.call(args, { timeoutMs: CALL_CAP_MS }),
  ),
  lostThenRetried(
    'again-new-session',
    'answer lost, a new request in a new session',
    'v1',
    async (ctx, agent, args) => {
      await agent.close();
      const again = await ctx.agent('v1');
      return again.call(args, { timeoutMs: CALL_CAP_MS });
    },
  ),
  lostThenRetried(
    'reissue-2026',
    'stream broken after the answer, re-issued (new id; 2026-07-28 where spoken)',
    'v2',
    (_ctx, agent, args) => agent.call(args, { timeoutMs: CALL_CAP_MS }),
  ),
  atOnce(2),
  atOnce(20),
  {
    id: 'slow-timeout',
    name: `slow tool (${SLOW_MS} ms) past the client's timeout (${CLIENT_TIMEOUT_MS} ms), then the retry`,
    needs: 'controls',
    async run(ctx) {
      const key = ctx.key('a');
      const args = ctx.target.argsFor(key, { delay_ms: SLOW_MS });
      const agent = await ctx.agent('v1');
      const first = await ctx.told(key, 1, agent.call(args, { timeoutMs: CLIENT_TIMEOUT_MS }));
      const again = await ctx.told(key, 1, agent.call(args, { timeoutMs: CALL_CAP_MS }));
      return {
        expected: { [key]: 1 },
        told: [first, again],
      };
    },
  },
  {
    id: 'target-killed',
    name: 'the target process killed mid-call, restarted, the call retried',
    needs: 'controls',
    kill: true,
    async run(ctx) {
      const controls = ctx.target.controls;
      if (!controls) throw new Error('target-killed needs the far side');
      const key = ctx.key('a');
      const args = ctx.target.argsFor(key, { hold: true });
      const agent = await ctx.agent('v1');
      const pending = agent.call(args, { timeoutMs: CALL_CAP_MS });
      const early = await startedOrAnswered(controls, key, pending);
      if (!early) await controls.killUpstream(key);
      const first = await ctx.told(key, 1, pending);
      // A retry that runs again must not hang: let any later run of it answer at once.
      controls.release(key);
      const again = await ctx.told(key, 1, agent.call(args, { timeoutMs: CALL_CAP_MS }));
      return {
        expected: { [key]: 1 },
        told: [first, again],
      };
    },
  },
  {
    id: 'gateway-killed',
    name: 'the gateway killed mid-call (SIGKILL), restarted, the call retried in a new session',
    needs: 'gateway-restart',
    kill: true,
    async run(ctx) {
      const controls = ctx.target.controls;
      if (!controls?.restartGateway) throw new Error('gateway-killed needs an HTTP front');
      const key = ctx.key('a');
      const args = ctx.target.argsFor(key, { hold: true });
      const agent = await ctx.agent('v1');
      const pending = agent.call(args, { timeoutMs: CALL_CAP_MS });
      await startedOrAnswered(controls, key, pending);
      await controls.restartGateway();
      // The gateway that had the call is gone: once another is up, the agent gives up on the old
      // session (an SDK client would otherwise wait for its stream to resume until its timeout).
      await agent.close();
      const first = await ctx.told(key, 1, pending);
      controls.release(key);
      const again = await ctx.told(key, 1, (await ctx.agent('v1')).call(args, { timeoutMs: CALL_CAP_MS }));
      return {
        expected: { [key]: 1 },
        told: [first, again],
      };
    },
  },
  {
    id: 'deliberate-repeat',
    name: 'A answered, then B, then A again on purpose (A must run twice)',
    async run(ctx) {
      const a = ctx.key('a');
      const b = ctx.key('b');
      const agent = await ctx.agent('v1');
      const first = await ctx.told(a, 1, agent.call(ctx.target.argsFor(a), { timeoutMs: CALL_CAP_MS }));
      const other = await ctx.told(b, 1, agent.call(ctx.target.argsFor(b), { timeoutMs: CALL_CAP_MS }));
      const repeat = await ctx.told(a, 2, agent.call(ctx.target.argsFor(a), { timeoutMs: CALL_CAP_MS }));
      return {
        expected: { [a]: 2, [b]: 1 },
        told: [first, other, repeat],
      };
    },
  },
];

/** Runs one scenario with its own agents, closing them whatever happens. */
export async function runScenario(
  scenario: ProbeScenario,
  target: ProbeTarget,
  runId: string,
): Promise<Observed> {
  const agents: ProbeAgent[] = [];
  const ctx: ScenarioContext = {
    target,
    key: (name) => `probe-${runId}-${scenario.id}-${name}`,
    agent: async (generation = 'v1') => {
      const agent = await connectAgent(target.endpoint(), generation, target.tool);
      agents.push(agent);
      return agent;
    },
    told: async (key, needs, answer) => {
      const said = await answer;
      return { key, needs, answer: said, countedThen: await target.count(key) };
    },
  };
  try {
    return await scenario.run(ctx);
  } finally {
    for (const agent of agents) await agent.close();
  }
}
