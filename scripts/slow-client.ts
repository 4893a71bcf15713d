/**
 * A slow client, to see when the HTTP front cuts one off (docs/security.md,
 * "Defaults"). It connects, waits `--delay` ms, then trickles a header line a
 * second (`headers`), or sends the headers and trickles a body byte a second
 * (`body`); `idle` sends nothing. It prints when the server answered and
 * closed, in seconds from connect. Loopback only.
 *
 *   npx tsx scripts/slow-client.ts 127.0.0.1:8787 headers|body|idle [--delay MS] [--token TOKEN]
 */
import { connect } from 'node:net';
import { parseArgs } from 'node:util';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { delay: { type: 'string', default: '0' }, token: { type: 'string' } },
});
const [address, mode] = positionals;
const [host, port] = (address ?? '').split(':');
if (!host || !port || !['headers', 'body', 'idle'].includes(mode ?? '')) {
  process.stderr.write('usage: slow-client.ts HOST:PORT headers|body|idle [--delay MS] [--token TOKEN]\n');
  process.exit(2);
}
if (!['127.0.0.1', 'localhost', '::1'].includes(host)) {
  process.stderr.write('slow-client: loopback addresses only\n');
  process.exit(2);
}

const auth = values.token ? `Authorization: Bearer ${values.token}\r\n` : '';
const start = Date.now();
const at = () => ((Date.now() - start) / 1000).toFixed(1);
const socket = connect(Number(port), host);
let trickle: NodeJS.Timeout | undefined;
socket.on('connect', () => {
  if (mode === 'idle') return;
  setTimeout(() => {
    process.stdout.write(`first byte at ${at()} s\n`);
    const head = `POST /mcp HTTP/1.1\r\nHost: ${host}:${port}\r\n${auth}`;
    if (mode === 'headers') {
      socket.write(head);
      trickle = setInterval(() => socket.write('X-Slow: 1\r\n'), 1000);
    } else {
      socket.write(
        `${head}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000000\r\n\r\n`,
      );
      trickle = setInterval(() => socket.write(' '), 1000);
    }
  }, Number(values.delay));
});
socket.on('data', (data) => process.stdout.write(`answer at ${at()} s: ${String(data).split('\r\n')[0]}\n`));
socket.on('error', (error) => process.stdout.write(`error at ${at()} s: ${error.message}\n`));
socket.on('close', () => {
  clearInterval(trickle);
  process.stdout.write(`${mode}: closed ${at()} s after connect\n`);
  process.exit(0);
});
