/**
 * Reads another Node process's heap from outside its code: the process runs
 * with `--inspect=127.0.0.1:0`, and this speaks the inspector protocol (the
 * Chrome DevTools Protocol, over a WebSocket) to it. A full garbage collection
 * first (HeapProfiler.collectGarbage), so that a figure is what is live, not
 * what V8 has not collected yet: RSS alone moves with V8's collections by
 * more than a session holds.
 */
import WebSocket from 'ws';

/** The URL a process started with `--inspect` prints on stderr. */
export function inspectorUrlIn(output: string): string | undefined {
  return /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];
}

export interface LiveMemory {
  /** V8's heap in use, and memory outside it held by JS objects (Buffers among them). */
  heapUsed: number;
  external: number;
  rss: number;
}

export class InspectorClient {
  readonly #socket: WebSocket;
  readonly #waiting = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  #nextId = 1;

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as {
        id?: number;
        result?: unknown;
        error?: { message: string };
      };
      const waiting = message.id === undefined ? undefined : this.#waiting.get(message.id);
      if (!waiting) return; // an event: none is enabled, none is wanted
      this.#waiting.delete(message.id as number);
      if (message.error) waiting.reject(new Error(`inspector: ${message.error.message}`));
      else waiting.resolve(message.result);
    });
    const failAll = (error: Error) => {
      for (const waiting of this.#waiting.values()) waiting.reject(error);
      this.#waiting.clear();
    };
    socket.on('close', () => failAll(new Error('inspector: the connection closed')));
    socket.on('error', failAll);
  }

  static connect(url: string): Promise<InspectorClient> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url);
      socket.once('open', () => resolve(new InspectorClient(socket)));
      socket.once('error', reject);
    });
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** The process's memory after a full garbage collection (taken twice: the first frees what finalizers release). */
  async liveMemory(): Promise<LiveMemory> {
    await this.send('HeapProfiler.collectGarbage');
    await this.send('HeapProfiler.collectGarbage');
    const answer = (await this.send('Runtime.evaluate', {
      expression: 'JSON.stringify(process.memoryUsage())',
      returnByValue: true,
    })) as { result: { value: string } };
    const usage = JSON.parse(answer.result.value) as LiveMemory;
    return { heapUsed: usage.heapUsed, external: usage.external, rss: usage.rss };
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.#socket.readyState === WebSocket.CLOSED) return resolve();
      this.#socket.once('close', () => resolve());
      this.#socket.close();
    });
  }
}
