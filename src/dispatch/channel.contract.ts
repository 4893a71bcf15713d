/**
 * The one contract suite every action channel must pass (MCP, HTTP, SSH):
 * each channel's contract test file calls `channelContract` with a factory for
 * the channel and a counting far side — a real target on loopback that counts
 * what arrived, and with what key. What the channel promises the engine
 * (channel.ts) is asserted here, once, for all of them.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveContract } from '../contracts/contract.js';
import { DispatchRefusedError, NotDispatchedError, OutcomeUnknownError } from '../errors.js';
import { ExecutionEngine } from '../executions/engine.js';
import { Fingerprinter } from '../identity/fingerprint.js';
import { KnownSecrets } from '../identity/redaction.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { actionCall } from './action-call.js';
import type { ActionChannel } from './channel.js';

/** The far side of the boundary: what reached the target. */
export interface CountingFarSide {
  /** The key each action that arrived carried (the execution id the channel sent), in order. */
  received(): Promise<Array<string | null>>;
}

/** One channel, and the far side it reaches. */
export interface ChannelUnderTest {
  channel: ActionChannel;
  /** The arguments of one action (the same every time: a re-send is of the same action). */
  args: Record<string, unknown>;
  far: CountingFarSide;
  /** The secret the far side echoes, when it is not the one `open` was given (SSH: its private key). */
  echoed?: string;
}

export type FarSideBehaviour =
  /** Performs the action and answers. */
  | 'answers'
  /** Cannot be reached, or the channel refuses before anything leaves: nothing arrives. */
  | 'unreachable'
  /** Receives the action (it counts), then the connection is lost before any answer. */
  | 'drops'
  /** Performs the action and answers with `secret` in its answer. */
  | 'echoes_secret';

export interface ChannelFactory {
  /**
   * A channel whose far side behaves as asked. `secrets` is the engine's set
   * of known secret values: the channel's credential joins it when resolved
   * (as through `Credentials`); a channel with no credential adds `secret`
   * itself, as any credential resolved in the process would be.
   */
  open(behaviour: FarSideBehaviour, secrets: KnownSecrets, secret: string): Promise<ChannelUnderTest>;
  /**
   * Whether the target itself honours the key, so that a re-send under the
   * same key runs once (the SSH marker); otherwise it receives both, with the
   * same key, and deduplicating is its part (an HTTP target, an upstream
   * built with the Idem library).
   */
  targetHonoursKey: boolean;
  /** Releases what `open` started. */
  cleanup(): Promise<void>;
}

const fingerprinter = new Fingerprinter(randomBytes(32));
let executions = 0;
const newExecutionId = () => `exe_CONTRACT${Date.now()}${++executions}`;

export function channelContract(name: string, makeFactory: () => ChannelFactory): void {
  describe(`action channel contract: ${name}`, () => {
    let factory: ChannelFactory;
    const open = (behaviour: FarSideBehaviour, secrets = new KnownSecrets(), secret = newSecret()) => {
      factory = makeFactory();
      return factory.open(behaviour, secrets, secret);
    };
    afterEach(async () => {
      await factory?.cleanup();
    });

    it('sends an action once, carrying the execution id, and the target answers', async () => {
      const { channel, args, far } = await open('answers');
      const id = newExecutionId();
      const result = await channel.dispatch(args, { executionId: id, redispatch: false });
      expect(result.isError).toBeFalsy();
      expect(await far.received()).toEqual([id]);
    });

    it('refused before sending is not executed (never unknown), and nothing reaches the target', async () => {
      const { channel, args, far } = await open('unreachable');
      const error = await channel.dispatch(args, { executionId: newExecutionId(), redispatch: false }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error instanceof NotDispatchedError || error instanceof DispatchRefusedError).toBe(true);
      expect(await far.received()).toEqual([]);
    });

    it('lost after sending is unknown (never "not executed"): the target did receive it', async () => {
      const { channel, args, far } = await open('drops');
      const id = newExecutionId();
      const error = await channel.dispatch(args, { executionId: id, redispatch: false }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      expect(await far.received()).toEqual([id]);
    });

    it('a re-send carries the same key; a target that honours it runs the action once', async () => {
      const { channel, args, far } = await open('answers');
      const id = newExecutionId();
      const first = await channel.dispatch(args, { executionId: id, redispatch: false });
      const again = await channel.dispatch(args, { executionId: id, redispatch: true });
      const received = await far.received();
      expect(received.length).toBe(factory.targetHonoursKey ? 1 : 2);
      expect(received.every((key) => key === id)).toBe(true);
      if (factory.targetHonoursKey) expect(again).toEqual(first);
    });

    it('a secret the target echoes is in neither the answer nor the stored outcome', async () => {
      const secrets = new KnownSecrets();
      const given = newSecret();
      const opened = await open('echoes_secret', secrets, given);
      const { channel, args, far } = opened;
      const secret = opened.echoed ?? given;
      // The far side does send it back: the channel's own answer carries it until the engine cuts it out.
      const raw = await channel.dispatch(args, { executionId: newExecutionId(), redispatch: false });
      expect(holds(raw, secret)).toBe(true);
      const store = new MemoryStore();
      const engine = new ExecutionEngine({ store, fingerprinter, knownSecrets: secrets });
      const { call, dispatch } = actionCall(
        'contract_tool',
        channel,
        resolveContract({ replay: 'keyed' }, undefined),
        args,
        { actor: 'contract-actor', session: null },
      );
      const answer = await engine.execute(call, dispatch);
      expect(await far.received()).toHaveLength(2);
      expect(answer.isError).toBeFalsy();
      const [record] = await store.list();
      expect(record?.state).toBe('completed');
      expect(holds(answer, secret)).toBe(false);
      expect(holds(record, secret)).toBe(false);
      expect(holds(await store.journalFor(record!.id), secret)).toBe(false);
    });
  });
}

/** Whether `value`, as JSON, holds `secret` anywhere (a multi-line key as JSON escapes it). */
function holds(value: unknown, secret: string): boolean {
  return JSON.stringify(value).includes(JSON.stringify(secret).slice(1, -1));
}

/** A fresh secret value, long enough to be redacted wherever it appears. */
function newSecret(): string {
  return `sk_contract_${randomBytes(12).toString('hex')}`;
}
