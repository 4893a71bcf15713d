import { Transform } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { KnownSecrets } from '../../identity/redaction.js';
import { headWithoutSecrets } from '../../identity/secret-cut.js';

/** The longest line relayed whole; the rest of a longer one is dropped, so that nothing is scrubbed in halves. */
const MAX_LINE_CHARS = 16 * 1024;

/**
 * A stdio upstream's stderr, line by line, scrubbed of the secrets Idem holds on its way to the
 * gateway's own stderr: an upstream that prints a credential it could read does not put it in the
 * operator's log. A line is scrubbed whole (a secret split across two reads is still one line);
 * one longer than MAX_LINE_CHARS keeps its start, cut so that no part of a secret is left at the
 * cut, and says it was cut.
 */
export function scrubbedLines(secrets: KnownSecrets): Transform {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let dropping = false;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const lines = (pending + decoder.write(chunk)).split('\n');
      pending = lines.pop() ?? '';
      let out = '';
      for (const line of lines) {
        // The end of a line already cut: dropped, with the rest of it.
        if (dropping) dropping = false;
        else out += `${secrets.redact(line)}\n`;
      }
      if (pending.length > MAX_LINE_CHARS && !dropping) {
        const head = headWithoutSecrets(pending, MAX_LINE_CHARS, secrets.values(), { unit: 'chars' });
        out += `${head.text} [line cut at ${MAX_LINE_CHARS} characters]\n`;
        dropping = true;
      }
      if (dropping) pending = '';
      done(null, out);
    },
    flush(done) {
      const rest = pending + decoder.end();
      done(null, rest && !dropping ? secrets.redact(rest) : '');
    },
  });
}
