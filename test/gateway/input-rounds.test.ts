import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as Client110 } from 'sdk-1-10/client/index.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransport110 } from 'sdk-1-10/client/streamableHttp.js';
import { CreateMessageRequestSchema } from 'sdk-1-10/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { idemCommand } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { executionsOf } from './fixtures/counting-server.js';

/**
 * Input asked in the middle of a call, across the two revisions, through the
 * gateway: a 2026-07-28 client in front of a 2025-era upstream that sends
 * elicitation/create or sampling/createMessage during the call (the client
 * gets `input_required` and its next call carries the answers back to the
 * held request), and a 2025-era client in front of a 2026-07-28 upstream that
 * answers `input_required` (the gateway asks the client and re-issues the
 * call). Either way the upstream counts one execution, and the gateway
 * records one: an input round is not a new intent.
 */

const COUNTING_2026 = join(REPO_ROOT, 'test/gateway/fixtures/counting-server-2026.ts');
const ASKS = ['elicitation', 'sampling'] as const;

/** The 2025-era counting server with its `count_after_asking` tool. */
function askingUpstream(dir: string) {
  const upstream = countingUpstream(dir);
  return { ...upstream, args: [...upstream.args, '--asking'] };
}

afterAll(() => removeTemporaries());

/** What the client's human and model answer, and how often they were asked. */
function answering() {
  const asked = { elicitation: 0, sampling: 0 };
  return {
    asked,
    elicit: () => {
      asked.elicitation++;
      return { action: 'accept' as const, content: { ok: true } };
    },
    sample: () => {
      asked.sampling++;
      return {
        role: 'assistant' as const,
        content: { type: 'text' as const, text: 'blue' },
        model: 'test-model',
      };
    },
  };
}

/** A v2 client (pinned to 2026-07-28, or in its legacy mode) that can be asked both things. */
async function v2Client(
  mode: 'modern' | 'legacy',
  target: { url: string } | { command: string; args: string[]; cwd: string; env?: Record<string, string> },
) {
  const answers = answering();
  const client = new Client(
    { name: `rounds-${mode}`, version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} }, sampling: {} },
      versionNegotiation: { mode: mode === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
    },
  );
  client.setRequestHandler('elicitation/create', async () => answers.elicit());
  client.setRequestHandler('sampling/createMessage', async () => answers.sample());
  await client.connect(
    'url' in target
      ? new StreamableHTTPClientTransport(new URL(target.url))
      : new StdioClientTransport({ ...target, stderr: 'ignore' }),
  );
  return {
    asked: answers.asked,
    call: async (args: Record<string, unknown>) =>
      client.callTool({ name: 'count_after_asking', arguments: args }) as Promise<unknown>,
    close: () => client.close(),
  };
}

/** The SDK 1.10 client (2024-11-05: sampling, no elicitation yet). */
async function sdk110Client(url: string) {
  const answers = answering();
  const client = new Client110(
    { name: 'rounds-sdk-1.10', version: '1.0.0' },
    { capabilities: { sampling: {} } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, async () => answers.sample());
  await client.connect(new StreamableHTTPClientTransport110(new URL(url)));
  return {
    asked: answers.asked,
    call: async (args: Record<string, unknown>) =>
      client.callTool({ name: 'count_after_asking', arguments: args }) as Promise<unknown>,
    close: () => client.close(),
  };
}

/** How many executions of `count_after_asking` the gateway recorded, by state. */
async function recorded(running: RunningGateway): Promise<string[]> {
  return (await running.gateway.store.list({ tool: 'count_after_asking' })).map((r) => r.state);
}

describe.each([
  ['stateful', false],
  ['stateless', true],
] as const)(
  'a 2026-07-28 client in front of a 2025-era upstream that asks mid-call (HTTP %s front)',
  (_m, stateless) => {
    const counts = freshDir('rounds-legacy-up');
    let running: RunningGateway;

    it.each(ASKS)('%s: input_required, the answers reach the held request, one execution', async (ask) => {
      running ??= await startHttpGateway({
        upstreams: { counter: askingUpstream(counts) },
        http: { stateless },
      });
      const client = await v2Client('modern', { url: running.url });
      try {
        const key = `modern-${ask}-${stateless}`;
        const result = await client.call({ key, ask });
        expect(textOf(result)).toBe(`${key}=1 (${ask === 'elicitation' ? 'confirmed' : 'blue'})`);
        expect(client.asked[ask]).toBe(1);
        expect(executionsOf(counts, key)).toBe(1);
        // The gateway recorded one execution for the whole round, and it completed.
        expect(await recorded(running)).toContain('completed');
        const forKey = (await running.gateway.store.list({ tool: 'count_after_asking' })).length;
        expect(forKey).toBe(ASKS.indexOf(ask) + 1);
      } finally {
        await client.close();
      }
    });

    afterAll(async () => {
      await running?.close();
    });
  },
);

describe('a 2025-era client in front of a 2026-07-28 upstream that answers input_required', () => {
  const counts = freshDir('rounds-modern-up');
  let running: RunningGateway;
  const upstream = {
    command: process.execPath,
    args: [...fixtureArgs(COUNTING_2026), '--dir', counts],
    cwd: REPO_ROOT,
  };

  it.each([
    ['v2-legacy', 'elicitation'],
    ['v2-legacy', 'sampling'],
    ['sdk-1.10', 'sampling'],
  ] as const)(
    '%s, %s: the gateway asks the client and re-issues the call; one execution',
    async (kind, ask) => {
      running ??= await startHttpGateway({ upstreams: { counter: upstream } });
      const client =
        kind === 'sdk-1.10'
          ? await sdk110Client(running.url)
          : await v2Client('legacy', { url: running.url });
      try {
        const key = `${kind}-${ask}`;
        const result = await client.call({ key, ask });
        expect(textOf(result)).toBe(`${key}=1 (${ask === 'elicitation' ? 'confirmed' : 'blue'})`);
        expect(client.asked[ask]).toBe(1);
        expect(executionsOf(counts, key)).toBe(1);
        const states = await recorded(running);
        expect(states.every((state) => state === 'completed')).toBe(true);
      } finally {
        await client.close();
      }
    },
  );

  it('the stateless front has no session to ask in: refused before anything ran', async () => {
    const stateless = await startHttpGateway({ upstreams: { counter: upstream }, http: { stateless: true } });
    const client = await sdk110Client(stateless.url);
    try {
      // Its requests reach the upstream with the gateway's own capabilities (none: nobody can be
      // asked), so the 2026-07-28 upstream refuses the call before running it (-32021), as it would
      // refuse any client that cannot answer it.
      const refused = await client
        .call({ key: 'stateless-legacy', ask: 'sampling' })
        .catch((e: unknown) => e);
      expect(String(refused)).toContain('-32021');
      expect(client.asked.sampling).toBe(0);
      expect(executionsOf(counts, 'stateless-legacy')).toBe(0);
    } finally {
      await client.close();
      await stateless.close();
    }
  });

  afterAll(async () => {
    await running?.close();
  });
});

describe('a 2026-07-28 client in front of a 2026-07-28 upstream (input_required passed through)', () => {
  it('the round completes once; the same call again is answered from it, not asked again (by default)', async () => {
    const counts = freshDir('rounds-modern-both');
    const running = await startHttpGateway({
      upstreams: {
        counter: {
          command: process.execPath,
          args: [...fixtureArgs(COUNTING_2026), '--dir', counts],
          cwd: REPO_ROOT,
        },
      },
    });
    const client = await v2Client('modern', { url: running.url });
    try {
      expect(textOf(await client.call({ key: 'both', ask: 'elicitation' }))).toBe('both=1 (confirmed)');
      expect(client.asked.elicitation).toBe(1);
      // One actor's same intent inside its window: a lost answer asked again, answered from the
      // completed execution (a contract with after_completion: new makes it a new call instead).
      const again = (await client.call({ key: 'both', ask: 'elicitation' })) as {
        _meta?: Record<string, unknown>;
      };
      expect(textOf(again)).toBe('both=1 (confirmed)');
      expect(again._meta?.['io.idem/replayed']).toBe(true);
      expect(client.asked.elicitation).toBe(1);
      expect(executionsOf(counts, 'both')).toBe(1);
    } finally {
      await client.close();
      await running.close();
    }
  });
});

describe('stdio front', () => {
  it('a 2026-07-28 client, a 2025-era upstream asking for elicitation: one execution', async () => {
    const counts = freshDir('rounds-stdio');
    const data = freshDir('rounds-stdio-data');
    const up = askingUpstream(counts);
    const gateway = idemCommand(['gateway', '--', up.command, ...up.args]);
    const client = await v2Client('modern', {
      ...gateway,
      env: { ...(process.env as Record<string, string>), IDEM_DATA_DIR: data },
    });
    try {
      expect(textOf(await client.call({ key: 'stdio', ask: 'elicitation' }))).toBe('stdio=1 (confirmed)');
      expect(client.asked.elicitation).toBe(1);
      expect(executionsOf(counts, 'stdio')).toBe(1);
    } finally {
      await client.close();
    }
    const store = await openStore({ kind: 'sqlite', path: join(data, 'idem.db') });
    try {
      expect((await store.list({ tool: 'count_after_asking' })).map((r) => r.state)).toEqual(['completed']);
    } finally {
      await store.close();
    }
  });
});
