/**
 * The library's world for the demo rows: the staleness harness's world
 * (test/support/staleness-horizon.ts: the engine on SQLite, Streamable HTTP on
 * loopback, an example server whose tools declare nothing, the demo's payment
 * processor ignoring Idempotency-Key and counting every charge, one injected
 * clock), plus two tools whose effect lands on a far side that only counts:
 * `toggle_light` (the light's state is the parity of the toggles that arrived)
 * and `add_one` (a counter). Each tool gets the rule's contract.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { type Candidate, openWorld, type World } from '../staleness-horizon.js';
import type { RuleAsBuilt } from './rules.js';

/** A far side that counts POST /count/<name> and answers the new count. */
export class FarSideCounter {
  readonly counts = new Map<string, number>();
  #server: Server | undefined;

  async start(): Promise<string> {
    this.#server = createServer((req, res) => {
      const name = /^\/count\/([\w-]+)$/.exec(req.url ?? '')?.[1];
      req.resume();
      req.on('end', () => {
        if (req.method !== 'POST' || !name) {
          res.writeHead(404).end();
          return;
        }
        const n = (this.counts.get(name) ?? 0) + 1;
        this.counts.set(name, n);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ n }));
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  count(name: string): number {
    return this.counts.get(name) ?? 0;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }
}

export interface LibraryWorld extends World {
  counter: FarSideCounter;
}

/** The rule as the staleness harness's candidate: every tool gets its contract. */
function candidateOf(rule: RuleAsBuilt): Candidate {
  return { id: rule.rule.id, label: rule.rule.label, contractFor: () => rule.contract };
}

export async function openLibraryWorld(rule: RuleAsBuilt): Promise<LibraryWorld> {
  const counter = new FarSideCounter();
  const counterUrl = await counter.start();
  const bump = async (name: string) => {
    const res = await fetch(`${counterUrl}/count/${name}`, { method: 'POST' });
    return ((await res.json()) as { n: number }).n;
  };
  const world = await openWorld(candidateOf(rule), (server, idem) => {
    const contract = rule.contract ? { contract: rule.contract } : {};
    idem.tool(
      server,
      'toggle_light',
      { description: 'Switch the light: on if it was off, off if it was on.', inputSchema: {}, ...contract },
      async () => {
        const n = await bump('light');
        return { content: [{ type: 'text', text: `The light is now ${n % 2 === 1 ? 'on' : 'off'}.` }] };
      },
    );
    idem.tool(
      server,
      'add_one',
      { description: 'Add one to a counter.', inputSchema: { counter: z.string() }, ...contract },
      async ({ counter: name }) => {
        const n = await bump(`counter-${name}`);
        return { content: [{ type: 'text', text: `Counter ${name} is now ${n}.` }] };
      },
    );
  });
  return {
    ...world,
    counter,
    close: async () => {
      await world.close();
      await counter.stop();
    },
  };
}
