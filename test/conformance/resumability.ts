/**
 * SSE resumability under protocol 2025-11-25 (SEP-1699), which the suite's
 * pending `server-sse-polling` scenario cannot exercise (it declares
 * 2025-03-26): a tools/call of `test_reconnection` gets a priming event (an id,
 * a retry hint, empty data), the server closes the stream before the result,
 * and a GET with Last-Event-ID delivers the result. Run it against the fixture
 * directly and through the gateway.
 */

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  retry?: number;
}

export interface ResumabilityReport {
  /** The first event on the POST stream had an id and empty data. */
  primed: boolean;
  retryMs: number | undefined;
  /** The POST stream ended without the tool's result. */
  closedBeforeResult: boolean;
  /** The GET with Last-Event-ID delivered the result of the same request id. */
  resumed: boolean;
  result: unknown;
}

const PROTOCOL = '2025-11-25';

/** Parses a complete SSE body into its events (comments and unknown fields are skipped). */
export function parseSse(body: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of body.split(/\r?\n\r?\n/)) {
    if (!block.trim()) continue;
    const event: SseEvent = { data: '' };
    const data: string[] = [];
    let seen = false;
    for (const line of block.split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon === 0) continue;
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      seen = true;
      if (field === 'id') event.id = value;
      else if (field === 'event') event.event = value;
      else if (field === 'retry') event.retry = Number(value);
      else if (field === 'data') data.push(value);
    }
    if (!seen) continue;
    event.data = data.join('\n');
    events.push(event);
  }
  return events;
}

/** Reads an SSE response until it ends or `until` accepts an event or `timeoutMs` passes. */
async function readSse(
  res: Response,
  timeoutMs: number,
  until: (event: SseEvent) => boolean = () => false,
): Promise<SseEvent[]> {
  if (!res.body) return [];
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const timer = setTimeout(() => void reader.cancel(), timeoutMs);
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      const complete = text.slice(0, text.lastIndexOf('\n\n') + 2);
      if (parseSse(complete).some(until)) {
        await reader.cancel();
        break;
      }
    }
  } finally {
    clearTimeout(timer);
  }
  return parseSse(text);
}

function headers(sessionId?: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL,
    ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
  };
}

const resultOf = (id: number) => (event: SseEvent) => {
  try {
    const message = JSON.parse(event.data) as { id?: unknown; result?: unknown };
    return message.id === id && message.result !== undefined;
  } catch {
    return false;
  }
};

/** Initializes a session, calls `test_reconnection`, resumes its stream, and deletes the session. */
export async function probeResumability(url: string, timeoutMs = 10_000): Promise<ResumabilityReport> {
  const init = await fetch(url, {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: PROTOCOL,
        capabilities: {},
        clientInfo: { name: 'resumability-probe', version: '1' },
      },
    }),
  });
  const sessionId = init.headers.get('mcp-session-id') ?? undefined;
  await init.text();
  if (!init.ok) throw new Error(`initialize answered HTTP ${init.status}`);
  try {
    const initialized = await fetch(url, {
      method: 'POST',
      headers: headers(sessionId),
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    await initialized.text();

    const call = await fetch(url, {
      method: 'POST',
      headers: headers(sessionId),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'test_reconnection', arguments: {} },
      }),
    });
    if (!call.headers.get('content-type')?.includes('text/event-stream')) {
      throw new Error(
        `tools/call answered ${call.status} ${call.headers.get('content-type')}, not an SSE stream`,
      );
    }
    const posted = await readSse(call, timeoutMs, resultOf(1));
    const first = posted[0];
    const primed = first?.id !== undefined && first.data.trim() === '';
    const lastEventId = posted.findLast((e) => e.id !== undefined)?.id;
    const closedBeforeResult = !posted.some(resultOf(1));
    if (!closedBeforeResult || lastEventId === undefined) {
      return { primed, retryMs: first?.retry, closedBeforeResult, resumed: false, result: undefined };
    }

    const resume = await fetch(url, {
      method: 'GET',
      headers: {
        accept: 'text/event-stream',
        'mcp-protocol-version': PROTOCOL,
        'last-event-id': lastEventId,
        ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
      },
    });
    const replayed = resume.ok ? await readSse(resume, timeoutMs, resultOf(1)) : [];
    if (!resume.ok) await resume.text();
    const reply = replayed.find(resultOf(1));
    return {
      primed,
      retryMs: first?.retry,
      closedBeforeResult,
      resumed: reply !== undefined,
      result: reply ? (JSON.parse(reply.data) as { result: unknown }).result : undefined,
    };
  } finally {
    if (sessionId) {
      const closed = await fetch(url, { method: 'DELETE', headers: headers(sessionId) }).catch(
        () => undefined,
      );
      await closed?.text();
    }
  }
}
