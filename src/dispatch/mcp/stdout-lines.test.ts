import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { LineTooLongError, type SkippedLine, StdoutLines } from './stdout-lines.js';

const read = (lines: StdoutLines) => {
  const messages: unknown[] = [];
  for (let m = lines.readMessage(); m !== null; m = lines.readMessage()) messages.push(m);
  return messages;
};

describe('StdoutLines (an upstream stdout as JSON-RPC messages)', () => {
  it('skips and reports a banner, a console.log and a JSON line that is not JSON-RPC; messages around them pass', () => {
    const skipped: SkippedLine[] = [];
    const lines = new StdoutLines((s) => skipped.push(s));
    lines.append(Buffer.from('server v1 ready\n{"jsonrpc":"2.0","id":1,"result":{}}\n'));
    lines.append(Buffer.from('created invoice for { customer: \'a\' }\r\n\n{"debug":true}\n'));
    lines.append(Buffer.from('{"jsonrpc":"2.0","method":"notifications/'));
    lines.append(Buffer.from('progress","params":{"progressToken":1,"progress":1}}\n'));
    expect(read(lines)).toEqual([
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } },
    ]);
    expect(skipped.map(({ reason, line }) => [reason, line])).toEqual([
      ['not_json', 'server v1 ready'],
      ['not_json', "created invoice for { customer: 'a' }"],
      ['not_jsonrpc', '{"debug":true}'],
    ]);
    expect(skipped[2]?.value).toEqual({ debug: true });
  });

  it('keeps memory bounded: a line longer than the bound without a newline throws and is dropped', () => {
    const lines = new StdoutLines(() => {}, 64);
    lines.append(Buffer.alloc(60, 'x'));
    expect(() => lines.append(Buffer.alloc(10, 'x'))).toThrow(LineTooLongError);
    // What follows the dropped part is read afresh.
    lines.append(Buffer.from('\n{"jsonrpc":"2.0","id":2,"result":{}}\n'));
    expect(read(lines)).toEqual([{ jsonrpc: '2.0', id: 2, result: {} }]);
  });

  it('a chunk may hold many lines and a line may span many chunks', () => {
    const lines = new StdoutLines(() => {});
    const message = JSON.stringify({ jsonrpc: '2.0', id: 3, result: { text: 'y'.repeat(100_000) } });
    for (let i = 0; i < message.length; i += 1000) lines.append(Buffer.from(message.slice(i, i + 1000)));
    expect(read(lines)).toEqual([]);
    lines.append(Buffer.from('\n'));
    expect(read(lines)).toHaveLength(1);
  });
});

describe('StdoutLines reads a plain result without the schema, and only what the schema accepts unchanged (issue 30)', () => {
  const lines = [
    '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}',
    '{"jsonrpc":"2.0","id":"a","result":{}}',
    '{"jsonrpc":"2.0","id":1,"result":{"_meta":{"progressToken":1},"content":[]}}',
    '{"jsonrpc":"2.0","id":1.5,"result":{}}',
    '{"jsonrpc":"2.0","id":null,"result":{}}',
    '{"jsonrpc":"1.0","id":1,"result":{}}',
    '{"jsonrpc":"2.0","id":1,"result":[]}',
    '{"jsonrpc":"2.0","id":1,"result":null}',
    '{"jsonrpc":"2.0","id":1,"result":{},"extra":1}',
    '{"jsonrpc":"2.0","id":9007199254740993,"result":{}}',
  ];
  it.each(lines)('%s: read as the schema reads it', (line) => {
    const skipped: SkippedLine[] = [];
    const reader = new StdoutLines((s) => skipped.push(s));
    reader.append(Buffer.from(`${line}\n`));
    const parsed = JSONRPCMessageSchema.safeParse(JSON.parse(line));
    const message = reader.readMessage();
    if (parsed.success) {
      expect(message).toEqual(parsed.data);
      expect(skipped).toEqual([]);
    } else {
      expect(message).toBeNull();
      expect(skipped.map((s) => s.reason)).toEqual(['not_jsonrpc']);
    }
  });
});
