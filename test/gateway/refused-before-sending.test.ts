/**
 * Issue 44, item 8: an HTTP action refused by the address guard is told the
 * same thing everywhere. The agent hears IDEM_DENIED, nothing executed; the
 * execution is `denied` with the reason, its journal has no `dispatched` and
 * no `outcome` — a refusal before anything left is not a dispatch — and
 * `idem executions show`, `idem audit verify`'s cross-check, the console's
 * activity and the gateway's metrics all say the same. The same holds when the
 * refused call had first been approved by an operator, and verify does not
 * mistake the refusal for a second approval decision.
 *
 * The gateway in process on loopback HTTP, the official SDK client, a target
 * that counts what reaches it (nothing must), the CLI as its own process.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriesOf } from '../../src/console/pages/activity.js';
import { idemCodeOf } from '../../src/executions/answers.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { runIdem } from '../support/run-cli.js';
import { removeTemporaries } from '../support/temp-dirs.js';
import { idemOf } from '../support/tool-results.js';

describe('a call the address guard refuses (issue 44, item 8)', () => {
  let target: Server;
  let reached = 0;
  let gateway: RunningGateway;
  let client: Client;

  beforeAll(async () => {
    target = createServer((req, res) => {
      reached++;
      req.resume();
      res.end('{}');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const port = (target.address() as AddressInfo).port;
    // `localhost` resolves to a loopback address, which no `allow.addresses` names: refused as it is sent.
    const tool = (approval?: string) => ({
      description: 'Charges, at a host the guard refuses.',
      input_schema: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
      method: 'POST',
      url: `http://localhost:${port}/charge`,
      body: { order: '{order}' },
      contract: { replay: 'keyed', ...(approval ? { approval } : {}) },
    });
    gateway = await startHttpGateway({
      upstreams: {},
      http_tools: { charge: tool(), charge_approved: tool('every_call') },
      metrics: { listen: '127.0.0.1:0' },
    } as unknown as Parameters<typeof startHttpGateway>[0]);
    client = new Client({ name: 'guarded-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await gateway?.close();
    target.closeAllConnections();
    await new Promise<void>((resolve) => target.close(() => resolve()));
    removeTemporaries();
  });

  const db = () => join(gateway.dataDir, 'idem.db');
  const call = async (name: string, order: string) =>
    (await client.callTool({ name, arguments: { order } })) as CallToolResult;

  /** What each place says of execution `ref`. */
  async function told(ref: string) {
    const record = await gateway.gateway.store.get(ref);
    const journal = await gateway.gateway.store.journalFor(ref);
    const shown = await runIdem(['executions', 'show', ref, '--db', db(), '--json'], {
      dataDir: gateway.dataDir,
    });
    expect(shown.code, shown.stderr).toBe(0);
    const show = JSON.parse(shown.stdout) as { execution: { state: string }; timeline: { kind: string }[] };
    return {
      state: record?.state,
      note: record?.note,
      journal: journal.map((e) => e.kind),
      shown: show.execution.state,
      shownKinds: show.timeline.map((e) => e.kind),
      console: journal.map((e) => seriesOf(e)).filter((s) => s !== undefined),
    };
  }

  it('is denied everywhere, with its reason, and never a dispatch; verify agrees', async () => {
    const answer = await call('charge', 'A-1');
    expect(idemCodeOf(answer)).toBe('IDEM_DENIED');
    const ref = idemOf(answer)?.ref as string;
    expect(ref).toMatch(/^exe_/);

    const seen = await told(ref);
    expect(seen).toMatchObject({
      state: 'denied',
      note: expect.stringMatching(/loopback|not one this tool may reach|refused/i),
      journal: ['received', 'accepted', 'denied'],
      shown: 'denied',
      console: ['received', 'denied'],
    });
    expect(seen.shownKinds).not.toContain('dispatched');
    expect(reached).toBe(0);

    // The metrics count a denial, no failure, no dispatch.
    const metrics = (await gateway.gateway.metrics.registry?.metrics()) ?? '';
    expect(metrics).toMatch(/idem_calls_total\{answer="denied",tool="charge"\} 1/);
    expect(metrics).not.toMatch(/idem_calls_total\{answer="(executed|not_executed|unknown)",tool="charge"\}/);

    // A retry is decided again (nothing ran, so nothing is replayed): denied again, as a new execution.
    const again = await call('charge', 'A-1');
    expect(idemCodeOf(again)).toBe('IDEM_DENIED');
    expect(idemOf(again)?.ref).not.toBe(ref);
    expect(reached).toBe(0);
  });

  it('approved first, then refused as it is sent: denied, and the approval still stands in verify', async () => {
    const asked = await call('charge_approved', 'B-1');
    expect(idemCodeOf(asked)).toBe('IDEM_AWAITING_APPROVAL');
    const ref = idemOf(asked)?.ref as string;
    const approved = await runIdem(['approvals', 'approve', ref, '--db', db(), '--operator', 'alice'], {
      dataDir: gateway.dataDir,
    });
    expect(approved.code, approved.stderr).toBe(0);
    const retry = await call('charge_approved', 'B-1');
    expect(idemCodeOf(retry)).toBe('IDEM_DENIED');
    expect(idemOf(retry)?.ref).toBe(ref);

    const seen = await told(ref);
    expect(seen.state).toBe('denied');
    expect(seen.journal).toEqual([
      'received',
      'accepted',
      'awaiting_approval',
      'authorized',
      'attached',
      'denied',
    ]);
    expect(reached).toBe(0);

    const verified = await runIdem(['audit', 'verify', '--db', db(), '--json'], { dataDir: gateway.dataDir });
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, executions: { checked: 3 } });
    expect(verified.code).toBe(0);
  });
});
