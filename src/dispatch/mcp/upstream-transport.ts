import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { KnownSecrets } from '../../identity/redaction.js';
import { withRelatedStreams } from '../../protocol/related-streams.js';
import { type PerRequestHttp, withStandardHeaders } from '../../protocol/standard-headers.js';
import { httpUpstreamTransport } from './http-transports.js';
import { scrubbedLines } from './stderr-relay.js';
import { StdioUpstreamTransport } from './stdio-transport.js';
import type { SkippedLine } from './stdout-lines.js';
import type { UpstreamOptions, UpstreamSpec } from './upstream-spec.js';

/**
 * A new transport to the upstream `spec` names: its process over stdio, or
 * its URL over Streamable HTTP (where each request's POST carries what
 * `httpOf` gives for its id) or the older HTTP+SSE transport, as its
 * `transport` says (default: found out, http-transports.ts).
 */
export function createUpstreamTransport(
  spec: UpstreamSpec,
  stderr: UpstreamOptions['stderr'],
  httpOf: (id: RequestId) => PerRequestHttp | undefined,
  onSkippedLine: (skipped: SkippedLine) => void,
  secrets?: KnownSecrets,
): Transport {
  if ('url' in spec) {
    return httpUpstreamTransport(
      {
        url: new URL(spec.url),
        ...(spec.headers ? { headers: spec.headers } : {}),
        fetch: withRelatedStreams(withStandardHeaders((id) => httpOf(id as RequestId))),
      },
      spec.transport ?? 'auto',
    );
  }
  // With secrets to keep out of the operator's log, stderr is relayed scrubbed instead of inherited.
  const relay = (stderr ?? 'inherit') === 'inherit' && secrets !== undefined && secrets.values().length > 0;
  const transport = new StdioUpstreamTransport(
    {
      command: spec.command,
      args: spec.args ?? [],
      // Exactly this environment: the SDK adds only its safe few (HOME, PATH, …) underneath.
      ...(spec.env ? { env: spec.env } : {}),
      ...(spec.cwd ? { cwd: spec.cwd } : {}),
      stderr: relay ? 'pipe' : (stderr ?? 'inherit'),
    },
    onSkippedLine,
  );
  // Written, not piped: a pipe per upstream process would add listeners to the one process.stderr.
  if (relay)
    transport.stderr?.pipe(scrubbedLines(secrets)).on('data', (chunk: Buffer) => process.stderr.write(chunk));
  return transport;
}

/**
 * A process of the stdio upstream `spec`, held (StdioUpstreamTransport.hold) and not yet started:
 * a spare for a connection to take (UpstreamOptions.spare), spawned by `start()`.
 */
export function heldStdioTransport(
  spec: Extract<UpstreamSpec, { command: string }>,
  stderr: UpstreamOptions['stderr'],
  secrets?: KnownSecrets,
): StdioUpstreamTransport {
  const transport = createUpstreamTransport(
    spec,
    stderr,
    () => undefined,
    () => {},
    secrets,
  ) as StdioUpstreamTransport;
  transport.hold();
  return transport;
}
