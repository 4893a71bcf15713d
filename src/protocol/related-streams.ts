/**
 * Which request an HTTP upstream's message belongs to. Over Streamable HTTP a
 * server sends what concerns one request (its log lines, its elicitation) on
 * that request's own response stream, and everything else on the standalone
 * (GET) stream; that is the only place the relation is said on the wire. The
 * SDK 1.x client transport the gateway speaks through reads every stream into
 * one `onmessage` and forgets which it was, so the gateway's fetch marks each
 * request or notification read from a POST's stream with that POST's request
 * id (in `_meta`, which the SDK passes through), and the upstream connection
 * takes the mark off again before anyone else sees the message.
 *
 * A stdio upstream says no such thing: only a progress token ties its
 * messages to a request.
 */

/** Where the mark travels between the fetch and the upstream connection; never past the connection. */
const RELATED_MARK = 'io.idem/related-request';

interface Mark {
  id: string | number;
  /** What the mark's insertion created, so that taking it off restores the message exactly. */
  created?: 'params' | '_meta';
}

/** A fetch that marks what each request's response stream carries with that request's id. */
export function withRelatedStreams(inner: typeof fetch): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init);
    const id = requestIdOf(init?.body);
    if (id === undefined || !response.body) return response;
    if (!/text\/event-stream/i.test(response.headers.get('content-type') ?? '')) return response;
    return new Response(response.body.pipeThrough(markEvents(id)), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/**
 * Takes the mark off a message: the id of the request whose stream carried
 * it, or undefined (the standalone stream, a stdio upstream, an unmarked message).
 */
export function takeRelatedMark(message: object): string | number | undefined {
  const params = (message as { params?: { _meta?: Record<string, unknown> } }).params;
  const mark = params?._meta?.[RELATED_MARK] as Mark | undefined;
  if (!params?._meta || mark === undefined) return undefined;
  delete params._meta[RELATED_MARK];
  if (mark.created === '_meta' || mark.created === 'params') delete params._meta;
  if (mark.created === 'params') delete (message as { params?: unknown }).params;
  return mark.id;
}

/** The id of the one JSON-RPC request a POST body carries (a batch or a notification: none). */
function requestIdOf(body: unknown): string | number | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const message = JSON.parse(body) as { id?: unknown; method?: unknown };
    const { id } = message;
    if (typeof message.method !== 'string') return undefined;
    return typeof id === 'string' || typeof id === 'number' ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Rewrites each SSE event whose data is a request or notification to carry the mark; the rest passes as it came. */
function markEvents(id: string | number): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = '';
  let event: string[] = [];
  const flushEvent = (): string => {
    const lines = event;
    event = [];
    // The blank line that ends the event goes out with it (alone: an empty event, kept as it came).
    return lines.length === 0 ? '\n' : `${marked(lines, id).join('\n')}\n\n`;
  };
  const take = (text: string, controller: TransformStreamDefaultController<Uint8Array>) => {
    pending += text;
    let out = '';
    for (let end = pending.search(/\r?\n|\r/); end >= 0; end = pending.search(/\r?\n|\r/)) {
      const line = pending.slice(0, end);
      const breakLength = pending.startsWith('\r\n', end) ? 2 : 1;
      pending = pending.slice(end + breakLength);
      // A lone \r at the end of a chunk may be the first half of \r\n: wait for the next chunk.
      if (breakLength === 1 && pending === '' && text.endsWith('\r')) {
        pending = `${line}\r`;
        break;
      }
      if (line === '') out += flushEvent();
      else event.push(line);
    }
    if (out) controller.enqueue(encoder.encode(out));
  };
  return new TransformStream({
    transform: (chunk, controller) => take(decoder.decode(chunk, { stream: true }), controller),
    flush: (controller) => {
      take(decoder.decode(), controller);
      const rest = [...event, ...(pending ? [pending] : [])];
      if (rest.length > 0) controller.enqueue(encoder.encode(marked(rest, id).join('\n')));
    },
  });
}

/** One event's lines, its data rewritten when it is a request or a notification. */
function marked(lines: string[], id: string | number): string[] {
  const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, ''));
  if (data.length === 0) return lines;
  let message: { method?: unknown; params?: { _meta?: Record<string, unknown> } };
  try {
    message = JSON.parse(data.join('\n'));
  } catch {
    return lines;
  }
  if (typeof message !== 'object' || message === null || typeof message.method !== 'string') return lines;
  const mark: Mark = { id };
  if (message.params === undefined) {
    mark.created = 'params';
    message.params = {};
  } else if (message.params._meta === undefined) mark.created = '_meta';
  message.params._meta = { ...message.params._meta, [RELATED_MARK]: mark };
  const others = lines.filter((l) => !l.startsWith('data:'));
  return [...others, `data: ${JSON.stringify(message)}`];
}
