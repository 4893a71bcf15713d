import { describe, expect, it } from 'vitest';
import { takeRelatedMark, withRelatedStreams } from './related-streams.js';

const SSE = { 'content-type': 'text/event-stream' };

/** The body the marking fetch gives back for `body`, which came in chunks of `chunkSize` bytes. */
async function through(body: string, init: RequestInit, chunkSize: number, headers = SSE): Promise<string> {
  const bytes = new TextEncoder().encode(body);
  const inner: typeof fetch = async () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += chunkSize) controller.enqueue(bytes.slice(i, i + chunkSize));
          controller.close();
        },
      }),
      { headers },
    );
  return (await withRelatedStreams(inner)('http://127.0.0.1/mcp', init)).text();
}

const post = (message: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(message) });
const dataOf = (text: string) =>
  text
    .split(/\r?\n/)
    .filter((l) => l.startsWith('data:') && l.slice(5).trim() !== '')
    .map((l) => JSON.parse(l.slice(5)) as Record<string, unknown>);

const LOG = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } };
const ASK = { jsonrpc: '2.0', id: 9, method: 'elicitation/create', params: { message: 'ok?' } };
const PING = { jsonrpc: '2.0', method: 'notifications/ping' };
const REPLY = { jsonrpc: '2.0', id: 4, result: {} };
const STREAM = [
  'id: prime\ndata: \n\n',
  `event: message\nid: 1\ndata: ${JSON.stringify(LOG)}\n\n`,
  `id: 2\r\ndata: ${JSON.stringify(ASK)}\r\n\r\n`,
  `data: ${JSON.stringify(PING)}\n\n`,
  `id: 3\ndata: ${JSON.stringify(REPLY)}\n\n`,
].join('');

describe('withRelatedStreams', () => {
  for (const chunkSize of [1, 7, 64, 100_000]) {
    it(`marks what a POST's stream carries with its request id, however it is cut (${chunkSize}-byte chunks)`, async () => {
      const text = await through(STREAM, post({ jsonrpc: '2.0', id: 4, method: 'tools/call' }), chunkSize);
      const messages = dataOf(text);
      expect(messages).toHaveLength(4);
      // The priming event (empty data) and the ids travel unchanged: resumption still works.
      expect(text.startsWith('id: prime\ndata: \n\n')).toBe(true);
      expect(text).toContain('id: 2');
      expect(messages.map((m) => takeRelatedMark(m))).toEqual([4, 4, 4, undefined]);
      // Taken off, each message is exactly what the upstream sent.
      expect(messages).toEqual([LOG, ASK, PING, REPLY]);
    });
  }

  it("leaves alone a JSON answer, a notification's POST, and a GET (the standalone stream)", async () => {
    const body = `data: ${JSON.stringify(LOG)}\n\n`;
    const json = await through(JSON.stringify(REPLY), post({ jsonrpc: '2.0', id: 4, method: 'x' }), 5, {
      'content-type': 'application/json',
    });
    expect(json).toBe(JSON.stringify(REPLY));
    expect(await through(body, post(PING), 5)).toBe(body);
    expect(await through(body, { method: 'GET' }, 5)).toBe(body);
  });
});
