import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { UpstreamClosedError } from '../../errors.js';
import { PendingRequests } from './pending-requests.js';
import type { UpstreamReply } from './upstream-spec.js';

const answerOf = (id: number, text: string): UpstreamReply => ({ jsonrpc: '2.0', id, result: { text } });
const elicit: JSONRPCRequest = { jsonrpc: '2.0', id: 'up-1', method: 'elicitation/create', params: {} };

afterEach(() => {
  vi.useRealTimers();
});

describe('a cancelled request', () => {
  it('by default: the upstream is told, and the request ends without an answer — none is made up', async () => {
    const pending = new PendingRequests();
    const { id, reply } = pending.open(undefined);
    const cancel = new AbortController();
    const told: string[] = [];
    pending.cancelOnAbort(id, cancel.signal, (reason) => told.push(reason));
    cancel.abort(new DOMException('the task was cancelled (tasks/cancel)', 'AbortError'));
    await expect(reply).rejects.toBeInstanceOf(UpstreamClosedError);
    expect(told).toEqual(['the task was cancelled (tasks/cancel)']);
    expect(pending.answer(id, answerOf(id, 'too late'))).toBe(false);
  });

  it("with answerWithinMs: the answer the upstream sends all the same is the request's", async () => {
    const pending = new PendingRequests();
    const { id, reply } = pending.open(undefined);
    const cancel = new AbortController();
    pending.cancelOnAbort(id, cancel.signal, () => {}, 60_000);
    cancel.abort();
    expect(pending.answer(id, answerOf(id, 'charged D1'))).toBe(true);
    await expect(reply).resolves.toEqual(answerOf(id, 'charged D1'));
  });

  it('with answerWithinMs: none within it, and the request ends without an answer', async () => {
    vi.useFakeTimers();
    const pending = new PendingRequests();
    const { id, reply } = pending.open(undefined);
    const cancel = new AbortController();
    pending.cancelOnAbort(id, cancel.signal, () => {}, 1_000);
    cancel.abort();
    vi.advanceTimersByTime(1_000);
    await expect(reply).rejects.toThrow(/did not answer within 1000 ms/);
  });
});

describe('what the upstream asks while a request runs', () => {
  it('goes to the asker of the request whose stream carried it, or — where nothing says — of the one still running', async () => {
    const pending = new PendingRequests();
    const asked: string[] = [];
    const asker = (name: string) => (request: JSONRPCRequest) => {
      asked.push(name);
      return Promise.resolve<UpstreamReply>({ jsonrpc: '2.0', id: request.id, result: { action: 'accept' } });
    };
    const first = pending.open(undefined, asker('first'));
    expect(await pending.asked(elicit, first.id)).toMatchObject({ result: { action: 'accept' } });
    expect(await pending.asked(elicit, undefined)).toMatchObject({ result: { action: 'accept' } });
    // Said to concern no request (an HTTP upstream's standalone stream): not a request's to answer.
    expect(pending.asked(elicit, null)).toBeUndefined();
    const second = pending.open(undefined, asker('second'));
    // Two running, over stdio: nothing can tell whose it is.
    expect(pending.asked(elicit, undefined)).toBeUndefined();
    expect(await pending.asked(elicit, second.id)).toBeDefined();
    // One told of its cancel asks nothing any more: the other is the one running.
    const cancel = new AbortController();
    pending.cancelOnAbort(first.id, cancel.signal, () => {}, 60_000);
    cancel.abort();
    expect(await pending.asked(elicit, undefined)).toBeDefined();
    expect(asked).toEqual(['first', 'first', 'second', 'second']);
    pending.answer(second.id, answerOf(second.id, 'done'));
    await second.reply;
    expect(pending.asked(elicit, second.id)).toBeUndefined();
  });

  it("an asker that throws answers the upstream with the error, and never breaks the connection's read", async () => {
    const pending = new PendingRequests();
    const { id } = pending.open(undefined, () => {
      throw new Error('boom');
    });
    await expect(pending.asked(elicit, id)).rejects.toThrow('boom');
  });
});
