import { randomBytes } from 'node:crypto';
import { resolveContract } from '../../src/contracts/contract.js';
import type { Rerun, ToolCall } from '../../src/executions/call.js';
import { ExecutionEngine } from '../../src/executions/engine.js';
import { Fingerprinter } from '../../src/identity/fingerprint.js';
import type { ExecutionStore } from '../../src/store/types.js';
import { CountingTarget } from './counting-target.js';

export interface RepeatRaceResult {
  rounds: number;
  repeatsPerRound: number;
  /** Rounds in which the target ran the action other than exactly twice (the call, one repeat). */
  violations: number;
  ms: number;
}

/**
 * Deliberate repeats racing: per round, one call runs, every engine (one per
 * store connection, as gateway processes sharing a data directory) replays
 * it, then `repeatsPerRound` repeats of that one ref are sent at once across
 * the engines, and once more after they settled. The target must have run
 * the action exactly twice.
 */
export async function repeatRace(options: {
  stores: ExecutionStore[];
  rounds: number;
  repeatsPerRound: number;
}): Promise<RepeatRaceResult> {
  const fingerprinter = new Fingerprinter(randomBytes(32));
  const engines = options.stores.map((store) => new ExecutionEngine({ store, fingerprinter }));
  const caller = { actor: 'local:racer', session: null };
  const contract = resolveContract(undefined, undefined);
  const call = (args: unknown): ToolCall => ({
    tool: 'toggle',
    channel: 'library',
    target: 'local',
    credentialRef: null,
    method: 'tools/call',
    arguments: args,
    contract,
    caller,
  });
  const started = performance.now();
  let violations = 0;
  for (let round = 0; round < options.rounds; round++) {
    const target = new CountingTarget();
    const rerun: Rerun = async (remembered) => ({
      call: call(remembered.arguments),
      dispatch: target.dispatch,
    });
    const args = { round, nonce: randomBytes(4).toString('hex') };
    const [first, ...others] = engines as [ExecutionEngine, ...ExecutionEngine[]];
    const result = await first.execute(call(args), target.dispatch);
    const ref = result._meta?.['io.idem/execution-id'] as string;
    for (const engine of others) await engine.execute(call(args), target.dispatch);
    await Promise.all(
      Array.from({ length: options.repeatsPerRound }, (_, i) =>
        (engines[i % engines.length] as ExecutionEngine).repeat(ref, caller, rerun),
      ),
    );
    await first.repeat(ref, caller, rerun);
    if (target.invocations !== 2) violations++;
  }
  return {
    rounds: options.rounds,
    repeatsPerRound: options.repeatsPerRound,
    violations,
    ms: performance.now() - started,
  };
}
