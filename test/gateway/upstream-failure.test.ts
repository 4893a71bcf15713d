import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { idemCodeOf, META } from '../../src/executions/answers.js';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { TOO_DEEP } from '../../src/support/json-depth.js';
import { fixtureArgs } from '../support/compiled-fixtures.js';
import { REPO_ROOT } from '../support/node22.js';
import { PATIENTLY } from '../support/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'idem-upstream-failure-'));
const lines = (file: string) =>
  existsSync(join(dir, file)) ? readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean) : [];
let gateway: Gateway | undefined;
afterAll(async () => {
  await gateway?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('an upstream that dies', () => {
  it('mid-call: that execution is unknown (never failed); while it is down calls get IDEM_NOT_EXECUTED; it is restarted and serves again', async () => {
    gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: dir,
        listen: { http: { host: '127.0.0.1', port: 0 } },
        upstreams: {
          flaky: {
            command: process.execPath,
            args: [...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/crashing-server.ts')), '--dir', dir],
            cwd: REPO_ROOT,
            // starts.log counts its restarts: none is started ahead for a next session.
            spare: false,
          },
        },
        tools: { act: { replay: 'status', scope: { business_key: 'key' } } },
      }),
      { version: 'test', upstreamStderr: 'ignore' },
    );
    const url = (await gateway.serveHttp()).url;
    const client = new Client({ name: 'agent', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const act = (args: Record<string, unknown>) =>
      client.callTool({ name: 'act', arguments: args }) as Promise<CallToolResult>;

    expect((await act({ key: 'before' })).isError).toBeFalsy();
    // From now on the upstream cannot come back until we say so.
    writeFileSync(join(dir, 'refuse-start'), '');
    const crashed = await act({ key: 'crash-1', crash: true });
    expect(idemCodeOf(crashed)).toBe('IDEM_OUTCOME_UNKNOWN');
    const ref = (crashed.structuredContent as { idem: { ref: string } }).idem.ref;
    expect((await gateway.store.get(ref))?.state).toBe('unknown');
    expect(lines('effects.log')).toContain('crash-1');

    const whileDown = await act({ key: 'while-down' });
    expect(idemCodeOf(whileDown)).toBe('IDEM_NOT_EXECUTED');
    expect(lines('effects.log')).not.toContain('while-down');
    // A retry of the crashed call does not run it again: its outcome is unknown, and stays so.
    expect(idemCodeOf(await act({ key: 'crash-1', crash: true }))).toBe('IDEM_OUTCOME_UNKNOWN');

    unlinkSync(join(dir, 'refuse-start'));
    // Asked again until the restarted upstream serves (its restart waits out a backoff, longer on a
    // loaded machine); meanwhile the only answer is IDEM_NOT_EXECUTED.
    let answer: CallToolResult | undefined;
    await vi.waitFor(async () => {
      answer = await act({ key: 'after' });
      if (answer.isError && idemCodeOf(answer) === 'IDEM_NOT_EXECUTED') throw new Error('not back yet');
    }, PATIENTLY);
    if (answer?.isError) expect(idemCodeOf(answer)).toBe('IDEM_NOT_EXECUTED');
    expect(answer?.isError).toBeFalsy();
    // The refused call was not executed, so retrying it now runs it — once.
    expect((await act({ key: 'while-down' })).isError).toBeFalsy();
    expect(lines('effects.log').filter((k) => k === 'crash-1')).toHaveLength(1);
    expect(lines('effects.log').filter((k) => k === 'while-down')).toHaveLength(1);
    expect(lines('starts.log').length).toBe(2);
    await client.close();
  }, 120_000);
});

describe('an upstream whose answer nests deeper than can be written again', () => {
  it('is answered, recorded completed and replayed, cut at 256 levels; the upstream ran once', async () => {
    const deepDir = mkdtempSync(join(tmpdir(), 'idem-deep-result-'));
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
    const deepGateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: deepDir,
        listen: { http: { host: '127.0.0.1', port: 0 } },
        upstreams: {
          deep: {
            command: process.execPath,
            args: [
              ...fixtureArgs(join(REPO_ROOT, 'test/gateway/fixtures/deep-result-server.ts')),
              '--dir',
              deepDir,
            ],
            cwd: REPO_ROOT,
          },
        },
        tools: { deep: { replay: 'keyed', scope: { business_key: 'key' } } },
      }),
      { version: 'test', upstreamStderr: 'ignore', logger },
    );
    const client = new Client({ name: 'agent', version: '1' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL((await deepGateway.serveHttp()).url)));
      const call = () =>
        client.callTool({ name: 'deep', arguments: { key: 'k-1' } }) as Promise<CallToolResult>;
      const first = await call();
      expect(first.isError).toBeFalsy();
      // The result is level 0, its structuredContent 1, the tree 2: level 256 holds the marker.
      let node: unknown = (first.structuredContent as { tree: unknown }).tree;
      let level = 2;
      for (; Array.isArray(node); level++) node = node[0];
      expect([level, node]).toEqual([256, TOO_DEEP]);
      const ref = first._meta?.[META.executionId] as string;
      expect((await deepGateway.store.get(ref))?.state).toBe('completed');
      const again = await call();
      expect(again._meta?.[META.replayed]).toBe(true);
      expect(again.structuredContent).toEqual(first.structuredContent);
      expect(readFileSync(join(deepDir, 'calls.log'), 'utf8')).toBe('k-1\n');
      // What the upstream answered was changed: the gateway's log says so, once, for the one answer.
      expect(warnings.filter((w) => w.includes('nested'))).toEqual([
        'a result nested deeper than 256 levels was cut there',
      ]);
    } finally {
      await client.close();
      await deepGateway.close();
      rmSync(deepDir, { recursive: true, force: true });
    }
  });
});
