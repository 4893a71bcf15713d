import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { KnownSecrets } from '../../identity/redaction.js';
import { scrubbedLines } from './stderr-relay.js';

const SECRET = 'sk-relay-0123456789';

async function relayed(chunks: (string | Buffer)[]): Promise<string> {
  const secrets = new KnownSecrets();
  secrets.add(SECRET);
  const source = new PassThrough();
  const relay = source.pipe(scrubbedLines(secrets));
  let out = '';
  relay.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const ended = new Promise((resolve) => relay.on('end', resolve));
  for (const chunk of chunks) source.write(chunk);
  source.end();
  await ended;
  return out;
}

describe("a stdio upstream's stderr, relayed scrubbed", () => {
  it('scrubs a secret split across reads, a character split across reads, and a last line without its newline', async () => {
    const euro = Buffer.from('€');
    expect(
      await relayed([
        `starting with ${SECRET.slice(0, 7)}`,
        `${SECRET.slice(7)} ok\nprice `,
        euro.subarray(0, 1),
        euro.subarray(1),
        `\nbye ${SECRET}`,
      ]),
    ).toBe('starting with [secret] ok\nprice €\nbye [secret]');
  });

  it('cuts a line past 16 KiB characters with no part of a secret at the cut, and drops the rest of it', async () => {
    const long = `${'a'.repeat(16 * 1024 - 5)}${SECRET}${'b'.repeat(40_000)}`;
    const out = await relayed([long.slice(0, 20_000), long.slice(20_000), '\nnext line\n']);
    expect(out).not.toContain(SECRET.slice(0, 5));
    expect(out).toMatch(/^a+\[secret\] \[line cut at 16384 characters\]\nnext line\n$/);
  });
});
