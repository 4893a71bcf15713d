import { randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { idemCodeOf } from '../executions/answers.js';
import { GatewayConfigSchema } from '../gateway/config/index.js';
import { Gateway } from '../gateway/gateway.js';
import { serveStreamableHttp } from '../library/http.js';
import { Idem } from '../library/idem.js';
import { connect, pollStatus, refOf, summarize } from './agent.js';
import { createChargeCardServer, QUICK_TIMEOUT } from './charge-card-server.js';
import { demoDataDir } from './data-dir.js';
import { PaymentProcessor } from './processor.js';
import { runSshScenarios, type SshScenarioReport } from './ssh-demo.js';
import { upstreamCommand } from './upstream-command.js';

export interface ScenarioReport {
  name: string;
  callsSent: number;
  charges: number;
  expectedCharges: number;
  agentSaw: string[];
  ok: boolean;
}

export interface DemoOptions {
  /** Where the store and keys go (created); kept. Default: IDEM_DATA_DIR, else a temporary directory removed at the end. */
  dataDir?: string;
  /** Keep that temporary directory (its path is said at the end). */
  keep?: boolean;
  out?: (line: string) => void;
  /**
   * `gateway` (default): the example server is a stdio upstream behind `idem gateway`,
   * and the agent talks to the gateway. `library`: the agent talks to the example
   * server directly, Idem inside it.
   */
  via?: 'gateway' | 'library';
  /** Where the SSH scenarios look for sshd (default /usr/sbin/sshd); none there: they are skipped, said in one line. */
  sshdBinary?: string;
}

/** One report per scenario: the charges (payment processor) and the SSH action tool's (empty when skipped). */
export interface DemoReport {
  charges: ScenarioReport[];
  ssh: SshScenarioReport[];
}

/**
 * The timeout of every tool whose scenario needs an answer: far beyond what a
 * charge takes on the slowest machine, so it never fires by accident. The one
 * scenario that shows a timeout (3) uses `charge_card_quick`, whose timeout is
 * short, with the processor held until it has fired.
 */
const LONG_TIMEOUT = '30s';

/**
 * The HTTP action tool of scenario 5: the charge sent by Idem itself (gateway
 * `http_tools:`, or `idem.httpTool` in the library), with the processor's key
 * by reference and the execution id as its Idempotency-Key.
 */
function chargeHttpSpec(processorUrl: string) {
  return {
    method: 'POST' as const,
    url: `${processorUrl}/charges`,
    body: { order_id: '{order_id}', amount_cents: '{amount_cents}', currency: 'EUR' },
    credential: { name: 'processor', scheme: 'bearer' as const },
    allow: { addresses: ['127.0.0.1'] },
    timeout: LONG_TIMEOUT,
  };
}
const CHARGE_HTTP_DESCRIPTION = 'Charge an order through the processor API (sent by Idem itself).';
const CHARGE_HTTP_CONTRACT = {
  replay: 'keyed' as const,
  scope: { business_key: 'order_id' },
  timeout: LONG_TIMEOUT,
};

/** The processor's API key, in a 0600 file: the credential the HTTP action tool names. */
function processorKeyFile(dataDir: string): string {
  const path = join(dataDir, 'processor.key');
  writeFileSync(path, `sk_demo_${randomBytes(12).toString('hex')}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
}

/** The agent's endpoint: the gateway in front of the example server, or the example server itself. */
async function startTarget(via: 'gateway' | 'library', dataDir: string, processorUrl: string) {
  const credentials = { processor: { file: processorKeyFile(dataDir) } };
  if (via === 'library') {
    const idem = await Idem.open({ dataDir, credentials });
    const http = await serveStreamableHttp(idem, () => {
      const server = createChargeCardServer({
        idem,
        processorUrl,
        timeout: LONG_TIMEOUT,
        quickTimeout: QUICK_TIMEOUT,
      });
      idem.httpTool(server, 'charge_card_http', {
        description: CHARGE_HTTP_DESCRIPTION,
        inputSchema: { order_id: z.string(), amount_cents: z.number().int().positive() },
        contract: CHARGE_HTTP_CONTRACT,
        http: chargeHttpSpec(processorUrl),
      });
      return server;
    });
    return {
      url: http.url,
      describe: 'the example MCP server (Idem as a library inside it)',
      close: async () => {
        await http.close();
        await idem.close();
      },
    };
  }
  const upstream = upstreamCommand();
  const gateway = await Gateway.start(
    GatewayConfigSchema.parse({
      data_dir: dataDir,
      listen: { http: { host: '127.0.0.1', port: 0 } },
      upstreams: {
        payments: {
          ...upstream,
          env: { PROCESSOR_URL: processorUrl, IDEM_DATA_DIR: join(dataDir, 'upstream') },
        },
      },
      credentials,
      http_tools: {
        charge_card_http: {
          description: CHARGE_HTTP_DESCRIPTION,
          input_schema: {
            type: 'object',
            properties: { order_id: { type: 'string' }, amount_cents: { type: 'integer', minimum: 1 } },
            required: ['order_id', 'amount_cents'],
          },
          contract: CHARGE_HTTP_CONTRACT,
          ...chargeHttpSpec(processorUrl),
        },
      },
      tools: {
        charge_card: { ...CHARGE_CONTRACT, timeout: LONG_TIMEOUT },
        charge_card_quick: { ...CHARGE_CONTRACT, timeout: QUICK_TIMEOUT },
      },
    }),
    { version: 'demo', upstreamStderr: 'ignore' },
  );
  const http = await gateway.serveHttp();
  return {
    url: http.url,
    describe: 'idem gateway, with the example MCP server as its stdio upstream',
    close: () => gateway.close(),
  };
}

/** The gateway's contract for the example server's charge tools (its own applies behind it). */
const CHARGE_CONTRACT = {
  replay: 'keyed',
  scope: { business_key: 'order_id' },
  attach_window: '24h',
  fingerprint: { secrets: ['card_number'] },
} as const;

const CARD = '4242424242424242';

/**
 * `idem demo`: an MCP server built with the library, on the embedded SQLite
 * default, driven by the official SDK client over real HTTP on loopback
 * through four ways a charge gets repeated. Resolves with one report per
 * scenario; every count must be right.
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoReport> {
  const { dataDir, done } = demoDataDir(options.dataDir, options.keep);
  const out = options.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const processor = new PaymentProcessor();
  // Whatever fails, the processor's server goes: left listening, it would keep the process alive.
  try {
    const processorUrl = await processor.start();
    return await runScenarios(processor, processorUrl, dataDir, { ...options, out });
  } finally {
    await processor.stop();
    done(out);
  }
}

async function runScenarios(
  processor: PaymentProcessor,
  processorUrl: string,
  dataDir: string,
  options: DemoOptions,
): Promise<DemoReport> {
  const out = options.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const http = await startTarget(options.via ?? 'gateway', dataDir, processorUrl);
  out(`Idem demo — store: SQLite in ${dataDir}`);
  out(`the agent talks to ${http.describe}: ${http.url}`);
  out(`payment processor (counts charges): ${processorUrl}\n`);

  const reports: ScenarioReport[] = [];
  const run = async (
    name: string,
    expectedCharges: number,
    body: (saw: (r: CallToolResult | string) => void) => Promise<{ callsSent: number; ok: boolean }>,
  ) => {
    const before = processor.charges;
    const agentSaw: string[] = [];
    const { callsSent, ok } = await body((r) => agentSaw.push(typeof r === 'string' ? r : summarize(r)));
    const charges = processor.charges - before;
    const report = {
      name,
      callsSent,
      charges,
      expectedCharges,
      agentSaw,
      ok: ok && charges === expectedCharges,
    };
    reports.push(report);
    out(`${report.ok ? 'PASS' : 'FAIL'}  ${name}`);
    out(
      `      calls sent: ${callsSent}   charges counted by the processor: ${charges} (expected ${expectedCharges})`,
    );
    for (const line of agentSaw) out(`      agent saw: ${line}`);
    out('');
  };

  try {
    await run(
      '1. The response is lost; the fetch layer re-sends the same request (same JSON-RPC id)',
      1,
      async (saw) => {
        const lossy = lossyFetch();
        const agent = await connect(http.url, lossy.fetch);
        lossy.loseNextToolCall = 'resend';
        const result = await callCharge(agent, 'order-1001', 1999);
        saw(result);
        await agent.close();
        return { callsSent: lossy.toolCallPosts, ok: !result.isError };
      },
    );

    await run(
      '1b. The response is lost; the agent calls again (new request id, new session)',
      1,
      async (saw) => {
        const lossy = lossyFetch();
        const agent = await connect(http.url, lossy.fetch);
        lossy.loseNextToolCall = 'throw';
        const lost = await callCharge(agent, 'order-1002', 2500).catch((error: unknown) => String(error));
        saw(typeof lost === 'string' ? `transport error: ${lost.split('\n')[0]}` : lost);
        await agent.close();
        const restarted = await connect(http.url);
        const retry = await callCharge(restarted, 'order-1002', 2500);
        saw(retry);
        await restarted.close();
        return { callsSent: 2, ok: !retry.isError && retry._meta?.['io.idem/replayed'] === true };
      },
    );

    await run('2. Two concurrent identical calls (two agent connections)', 1, async (saw) => {
      // The processor holds the charge until one of the two has been answered: that one lost the
      // claim while the other's charge was in flight, however long either took to arrive.
      const release = processor.holdCharges();
      const chargesBefore = processor.charges;
      const [a, b] = await Promise.all([connect(http.url), connect(http.url)]);
      const calls = [callCharge(a, 'order-2001', 4200), callCharge(b, 'order-2001', 4200)];
      const early = await Promise.race(calls).finally(release);
      const results = await Promise.all(calls);
      for (const r of results) saw(r);
      let ok = results.filter((r) => !r.isError).length === 1 && idemCodeOf(early) === 'IDEM_IN_FLIGHT';
      if (idemCodeOf(early) === 'IDEM_IN_FLIGHT') {
        await processor.chargesReach(chargesBefore + 1);
        const final = await pollStatus(a, refOf(early));
        saw(`status tool → ${summarize(final)}`);
        ok &&= !final.isError;
      }
      await Promise.all([a.close(), b.close()]);
      return { callsSent: 2, ok };
    });

    await run(
      `3. The processor is slower than the tool timeout (charge_card_quick, ${QUICK_TIMEOUT}); the agent asks the status tool`,
      1,
      async (saw) => {
        // Held until the agent has been told the outcome is unknown: the timeout fires first on any machine.
        const release = processor.holdCharges();
        const chargesBefore = processor.charges;
        const agent = await connect(http.url);
        const first = await callCharge(agent, 'order-3001', 9900, 'charge_card_quick').finally(release);
        saw(first);
        let ok = idemCodeOf(first) === 'IDEM_OUTCOME_UNKNOWN';
        if (ok) {
          await processor.chargesReach(chargesBefore + 1);
          const final = await pollStatus(agent, refOf(first));
          saw(`status tool → ${summarize(final)}`);
          ok = !final.isError;
        }
        await agent.close();
        return { callsSent: 1, ok };
      },
    );

    await run(
      '4. A deliberate second purchase: same card and amount, a different order id',
      1,
      async (saw) => {
        const agent = await connect(http.url);
        const again = await callCharge(agent, 'order-1001', 1999);
        saw(`repeat of order-1001 → ${summarize(again)}`);
        const second = await callCharge(agent, 'order-4001', 1999);
        saw(`order-4001 → ${summarize(second)}`);
        await agent.close();
        return { callsSent: 2, ok: again._meta?.['io.idem/replayed'] === true && !second.isError };
      },
    );

    await run(
      "5. An HTTP action tool (Idem sends the charge itself, Idempotency-Key = execution id): the processor's answer is lost; the agent calls again",
      1,
      async (saw) => {
        const requestsBefore = processor.requests;
        const agent = await connect(http.url);
        const args = { order_id: 'order-5001', amount_cents: 3100 };
        // The processor charges, then the connection drops before its answer: the outcome is unknown.
        processor.loseNextAnswer = true;
        const first = (await agent.callTool({ name: 'charge_card_http', arguments: args })) as CallToolResult;
        saw(first);
        // The agent calls again: the tool is keyed, so Idem re-sends under the same key, and the
        // processor answers with the charge it already made.
        const again = (await agent.callTool({ name: 'charge_card_http', arguments: args })) as CallToolResult;
        saw(again);
        const requests = processor.requests - requestsBefore;
        saw(`processor: ${requests} HTTP requests, both with Idempotency-Key ${processor.keys.at(-1)}`);
        await agent.close();
        const sameKey = processor.keys.at(-1) === processor.keys.at(-2);
        return {
          callsSent: 2,
          ok: idemCodeOf(first) === 'IDEM_OUTCOME_UNKNOWN' && !again.isError && requests === 2 && sameKey,
        };
      },
    );
  } finally {
    await http.close();
  }
  const ssh = await runSshScenarios({
    dataDir,
    out,
    via: options.via ?? 'gateway',
    processorUrl,
    ...(options.sshdBinary ? { sshdBinary: options.sshdBinary } : {}),
  });
  const failed = [...reports, ...ssh].filter((r) => !r.ok).length;
  out(failed === 0 ? 'All scenarios: every count right.' : `${failed} scenario(s) FAILED.`);
  return { charges: reports, ssh };
}

async function callCharge(
  client: Client,
  orderId: string,
  amountCents: number,
  tool = 'charge_card',
): Promise<CallToolResult> {
  return (await client.callTool({
    name: tool,
    arguments: { order_id: orderId, amount_cents: amountCents, card_number: CARD },
  })) as CallToolResult;
}

/**
 * A fetch that loses the response of the next tools/call: the request reaches
 * the server and runs, the answer never arrives. Then it either re-sends the
 * very same request (what retrying HTTP clients do) or fails like a dropped
 * connection.
 */
function lossyFetch() {
  const state = {
    loseNextToolCall: undefined as 'resend' | 'throw' | undefined,
    toolCallPosts: 0,
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      const isToolCall = typeof init?.body === 'string' && init.body.includes('"tools/call"');
      if (isToolCall) state.toolCallPosts++;
      const response = await fetch(input, init);
      if (!isToolCall || !state.loseNextToolCall) return response;
      const mode = state.loseNextToolCall;
      state.loseNextToolCall = undefined;
      await response.text(); // the server finished; its answer is dropped on the floor
      if (mode === 'throw') throw new TypeError('fetch failed: connection reset');
      state.toolCallPosts++;
      return fetch(input, init);
    }) as typeof globalThis.fetch,
  };
  return state;
}
