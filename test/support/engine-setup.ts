import { randomBytes } from 'node:crypto';
import { resolveContract, type ToolContract } from '../../src/contracts/contract.js';
import type { Caller, ToolCall } from '../../src/executions/call.js';
import { ExecutionEngine } from '../../src/executions/engine.js';
import { Fingerprinter } from '../../src/identity/fingerprint.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { ExecutionStore } from '../../src/store/types.js';
import { manualClock } from './gate.js';

const fingerprinter = new Fingerprinter(randomBytes(32));

/**
 * An engine over a memory store, both on a clock the test moves, so that a
 * loaded machine cannot expire a lease or window early.
 */
export function engineOnManualClock(
  options: {
    store?: ExecutionStore;
    clock?: ReturnType<typeof manualClock>;
    approver?: ConstructorParameters<typeof ExecutionEngine>[0]['approver'];
  } = {},
) {
  const clock = options.clock ?? manualClock();
  const store = options.store ?? new MemoryStore({ clock: clock.now });
  const engine = new ExecutionEngine({
    store,
    fingerprinter,
    clock: clock.now,
    ...(options.approver ? { approver: options.approver } : {}),
  });
  return { store, engine, clock };
}

export const ALICE: Caller = { actor: 'token:alice', session: 's1' };

/** A call as the library makes it: `contract` undefined is the cautious default. */
export function libraryCall(
  contract: ToolContract | undefined,
  args: unknown,
  caller: Caller = ALICE,
  tool = 'charge_card',
): ToolCall {
  return {
    tool,
    channel: 'library',
    target: 'local',
    credentialRef: null,
    method: 'tools/call',
    arguments: args,
    contract: resolveContract(contract, undefined),
    caller,
  };
}
