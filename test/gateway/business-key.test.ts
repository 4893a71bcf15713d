import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countingUpstream } from '../support/counting-upstream.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { executionsOf } from './fixtures/counting-server.js';

/**
 * "One order, one charge" through the gateway (issue 9, item 3): with
 * `scope: { business_key }` the key names the action. Counted at the upstream:
 * variations of a call under one key are dispatched once; the others get
 * IDEM_KEY_CONFLICT with the first's ref. Two actors (bearer tokens on the
 * HTTP front) show the key's sharing: per actor (default) or shared.
 *
 * One counting server is mounted twice: `own__count` keys per actor,
 * `shared__count` shares keys across actors. Both count into one directory.
 */
describe('business key through the gateway', () => {
  const tokens = { a: 'token-of-agent-a', b: 'token-of-agent-b' };
  const sha = (token: string) => createHash('sha256').update(token).digest('hex');
  const counts = freshDir('bizkey-counts');
  let running: RunningGateway;
  let agentA: Client;
  let agentB: Client;

  const connect = async (token: string, name: string) => {
    const client = new Client({ name, version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(running.url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    return client;
  };

  beforeAll(async () => {
    running = await startHttpGateway({
      upstreams: { own: countingUpstream(counts), shared: countingUpstream(counts) },
      tools: {
        own__count: { replay: 'keyed', scope: { business_key: 'key' } },
        shared__count: { replay: 'keyed', scope: { business_key: 'key', shared: true } },
      },
      auth: {
        bearer: [
          { token_sha256: sha(tokens.a), actor: 'agent-a' },
          { token_sha256: sha(tokens.b), actor: 'agent-b' },
        ],
      },
    });
    agentA = await connect(tokens.a, 'agent-a');
    agentB = await connect(tokens.b, 'agent-b');
  }, 60_000);

  afterAll(async () => {
    await agentA?.close();
    await agentB?.close();
    await running?.close();
    removeTemporaries();
  });

  const call = async (client: Client, name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  const idem = (r: CallToolResult) =>
    (r.structuredContent as { idem?: { code: string; ref: string; state: string; advice: string } })?.idem;
  const refOf = (r: CallToolResult) => r._meta?.['io.idem/execution-id'] as string | undefined;

  it('five variations of a call with one key → exactly one dispatch; the other four get IDEM_KEY_CONFLICT with its ref', async () => {
    const first = await call(agentA, 'own__count', { key: 'B1', payload: 'amount=10;card=visa' });
    expect(first.isError).toBeFalsy();
    expect(first.structuredContent).toMatchObject({ key: 'B1', value: 1 });
    const ref = refOf(first);
    expect(ref).toMatch(/^exe_/);

    const variations: Record<string, unknown>[] = [
      // A field the upstream ignores anyway (not declared ignorable, so it is another request).
      { key: 'B1', payload: 'amount=10;card=visa', trace: 'retry-2' },
      { key: 'B1', payload: 'amount=99;card=visa' },
      { key: 'B1', payload: 'amount=10;card=amex' },
      { key: 'B1' },
    ];
    for (const args of variations) {
      const answer = await call(agentA, 'own__count', args);
      expect(answer.isError).toBe(true);
      expect(idem(answer)).toMatchObject({ code: 'IDEM_KEY_CONFLICT', ref, state: 'completed' });
      expect(idem(answer)?.advice).toMatch(/new key/);
      expect((answer.content[0] as { text: string }).text).toMatch(/^IDEM_KEY_CONFLICT: .*NOT executed/);
    }
    expect(executionsOf(counts, 'B1')).toBe(1);

    // The identical call is the stored replay.
    const again = await call(agentA, 'own__count', { payload: 'amount=10;card=visa', key: 'B1' });
    expect(again.isError).toBeFalsy();
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    expect(again.structuredContent).toMatchObject({ key: 'B1', value: 1 });
    expect(refOf(again)).toBe(ref);
    expect(executionsOf(counts, 'B1')).toBe(1);
  });

  it('concurrent variations under one key: one dispatch, whoever wins', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call(agentA, 'own__count', { key: 'C1', payload: `amount=${i}` })),
    );
    expect(executionsOf(counts, 'C1')).toBe(1);
    expect(answers.filter((a) => !a.isError)).toHaveLength(1);
    for (const answer of answers.filter((a) => a.isError)) {
      expect(['IDEM_KEY_CONFLICT', 'IDEM_IN_FLIGHT']).toContain(idem(answer)?.code);
    }
    expect(new Set(answers.map(refOf)).size).toBe(1);
  });

  it('per actor (default): another actor with the same key is another action → two dispatches', async () => {
    const a = await call(agentA, 'own__count', { key: 'P1', payload: 'x' });
    const b = await call(agentB, 'own__count', { key: 'P1', payload: 'x' });
    expect(a.isError).toBeFalsy();
    expect(b.isError).toBeFalsy();
    expect(refOf(a)).not.toBe(refOf(b));
    expect(executionsOf(counts, 'P1')).toBe(2);
  });

  it("shared: another actor's call with the key gets the original's ref and state, not its result → one dispatch", async () => {
    const a = await call(agentA, 'shared__count', { key: 'S1', payload: 'amount=10' });
    expect(a.isError).toBeFalsy();
    const ref = refOf(a);

    for (const args of [
      { key: 'S1', payload: 'amount=10' },
      { key: 'S1', payload: 'amount=11' },
    ]) {
      const b = await call(agentB, 'shared__count', args);
      expect(b.isError).toBe(true);
      expect(idem(b)).toMatchObject({ code: 'IDEM_KEY_CONFLICT', ref, state: 'completed' });
      expect(JSON.stringify(b)).not.toContain('"value"');
    }
    expect(executionsOf(counts, 'S1')).toBe(1);

    // The status tool answers the caller that started it, and nobody else.
    const status = async (client: Client) =>
      (await client.callTool({ name: 'idem_execution_status', arguments: { ref } })) as CallToolResult;
    expect(idem(await status(agentB))?.code).toBe('IDEM_UNKNOWN_EXECUTION');
    expect((await status(agentA)).structuredContent).toMatchObject({ key: 'S1', value: 1 });
    // And the original's caller still gets its replay.
    const replay = await call(agentA, 'shared__count', { key: 'S1', payload: 'amount=10' });
    expect(replay._meta?.['io.idem/replayed']).toBe(true);
    expect(executionsOf(counts, 'S1')).toBe(1);
  });
});
