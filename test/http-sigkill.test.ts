/**
 * `idem gateway` SIGKILLed while an HTTP action tool's request is at the
 * target, then restarted on the same store: the same call never becomes a
 * second charge. A `keyed` tool is recovered by re-sending with the same
 * Idempotency-Key (the processor, which honours it, charges once); a `review`
 * tool to a target that ignores keys waits for an operator and sends nothing.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { PaymentProcessor } from '../src/demo/processor.js';
import { idemCodeOf, META } from '../src/executions/answers.js';
import { chargeHttpTool } from './support/charge-tool.js';
import { countingUpstream } from './support/counting-upstream.js';
import { type GatewayProcess, mcpClient, startGatewayProcess } from './support/gateway-process.js';
import { askUntilSettled } from './support/until-settled.js';
import { PATIENTLY } from './support/wait.js';

const root = mkdtempSync(join(tmpdir(), 'idem-http-sigkill-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

async function scenario(replay: 'keyed' | 'review', honoursKeys: boolean) {
  const dir = mkdtempSync(join(root, `${replay}-`));
  const processor = new PaymentProcessor({ honoursKeys });
  let release!: () => void;
  processor.hold = new Promise((resolve) => (release = resolve));
  const base = await processor.start();
  cleanups.push(async () => {
    release();
    await processor.stop();
  });
  const keyFile = join(dir, 'pay.key');
  writeFileSync(keyFile, 'sk_test_sigkill_0123456789');
  chmodSync(keyFile, 0o600);
  const config = {
    data_dir: dir,
    upstreams: { counter: countingUpstream(dir) },
    credentials: { pay: { file: keyFile } },
    http_tools: { charge: chargeHttpTool(base, { replay, lease: '1s' }) },
  };
  const configPath = join(dir, 'idem.json');
  const start = async () => {
    const gateway = await startGatewayProcess(config, configPath);
    cleanups.push(() => gateway.kill('SIGKILL'));
    const client = await mcpClient(gateway.url, 'restarting-agent');
    cleanups.push(() => client.close());
    return { gateway, client };
  };
  return { processor, release: () => release(), start };
}

const charge = (client: Client) =>
  client.callTool({
    name: 'charge',
    arguments: { order_id: 'K-1', amount_cents: 4200 },
  }) as Promise<CallToolResult>;

/** Calls again while the dead holder's lease runs (IDEM_IN_FLIGHT), by the store's clock. */
const afterLease = (client: Client): Promise<CallToolResult> => askUntilSettled(() => charge(client));

async function killMidRequest(
  first: { gateway: GatewayProcess; client: Client },
  processor: PaymentProcessor,
) {
  void charge(first.client).catch(() => {});
  await vi.waitFor(() => expect(processor.requests).toBeGreaterThan(0), PATIENTLY);
  expect(processor.requests).toBe(1);
  await first.gateway.kill('SIGKILL');
}

// Two gateway processes per test (tsx compiles each at start): slow on a loaded machine.
describe('gateway SIGKILLed while an HTTP action is at the target', { timeout: 150_000 }, () => {
  it('keyed: the restarted gateway re-sends with the same key, and the target charges once', async () => {
    const { processor, release, start } = await scenario('keyed', true);
    await killMidRequest(await start(), processor);
    const second = await start();
    release();
    const answer = await afterLease(second.client);
    expect(answer.isError).toBeFalsy();
    expect(processor.requests).toBe(2);
    expect(processor.keys[1]).toBe(processor.keys[0]);
    expect(answer._meta?.[META.executionId]).toBe(processor.keys[0]);
    expect(processor.charges).toBe(1);
  });

  it('review, target ignoring keys: the restarted gateway answers IDEM_REVIEW_REQUIRED and sends nothing', async () => {
    const { processor, release, start } = await scenario('review', false);
    await killMidRequest(await start(), processor);
    const second = await start();
    const answer = await afterLease(second.client);
    expect(idemCodeOf(answer)).toBe('IDEM_REVIEW_REQUIRED');
    release();
    await expect.poll(() => processor.charges).toBe(1);
    expect(idemCodeOf(await charge(second.client))).toBe('IDEM_REVIEW_REQUIRED');
    expect(processor.requests).toBe(1);
  });
});
