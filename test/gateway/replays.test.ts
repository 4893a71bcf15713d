/**
 * Replays that say so, and a deliberate repeat, through the gateway in front
 * of the published @modelcontextprotocol/server-everything (as published,
 * over stdio), with the official SDK client over loopback HTTP.
 *
 * `toggle-simulated-logging` is the observable one: it answers "Started …"
 * and, called again in the same upstream session, "Stopped …". Annotated
 * readOnlyHint: false, it gets the cautious contract, so an identical call
 * within 15 minutes is answered with the stored result — the "toggle that
 * never stopped".
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { GatewayConfigSchema } from '../../src/gateway/config/index.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { firstTextOf, idemOf, replayNoteOf, storedContentOf, textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';

const EVERYTHING = {
  command: process.execPath,
  args: [join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
};
const TOGGLE = { name: 'toggle-simulated-logging', arguments: {} };

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => {});
});
afterAll(removeTemporaries);

async function gateway(config: Record<string, unknown> = {}): Promise<RunningGateway> {
  const gw = await startHttpGateway({ upstreams: { everything: EVERYTHING }, ...config });
  open.push(gw);
  return gw;
}

async function connect(url: string, name = 'replay-agent'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  open.push(client);
  return client;
}

const call = (client: Client, params: { name: string; arguments: Record<string, unknown> }) =>
  client.callTool(params) as Promise<CallToolResult>;
const repeat = (client: Client, ref: string) =>
  call(client, { name: 'idem_execution_status', arguments: { ref, action: 'repeat' } });
const refOf = (result: CallToolResult) =>
  idemOf(result)?.ref ?? (result._meta?.['io.idem/execution-id'] as string);
const note = replayNoteOf;

describe('a replayed result says so', () => {
  it('in its content, before the original, and in _meta; a deliberate repeat runs it again as a new execution', async () => {
    const gw = await gateway();
    const client = await connect(gw.url);
    const first = await call(client, TOGGLE);
    expect(textOf(first)).toMatch(/^Started simulated/);
    const ref = refOf(first);

    // The same session asks again, nothing in between: a toggle pressed twice cannot be told from a
    // retry. The note comes first, so that the first text read is not "Started" taken for fresh.
    const again = await call(client, TOGGLE);
    expect(again.content.slice(1)).toEqual(first.content);
    expect(firstTextOf(again)).toMatch(/^\[idem\] Replayed, not run again/);
    expect(note(again)).toContain(`stored result of execution ${ref}`);
    expect(note(again)).toContain('nothing was run now');
    expect(note(again)).toContain(`call idem_execution_status with {"ref":"${ref}","action":"repeat"}`);
    expect(again._meta).toMatchObject({
      'io.idem/replayed': true,
      'io.idem/execution-id': ref,
      'io.idem/repeat': { tool: 'idem_execution_status', arguments: { ref, action: 'repeat' } },
    });
    expect(Date.parse(again._meta?.['io.idem/executed-at'] as string)).toBeLessThanOrEqual(Date.now());

    // The toggle really toggles this time: the upstream answers afresh.
    const repeated = await repeat(client, ref);
    expect(textOf(repeated)).toMatch(/^Stopped simulated logging/);
    const fresh = refOf(repeated);
    expect(fresh).not.toBe(ref);
    expect(repeated._meta?.['io.idem/repeat-of']).toBe(ref);
    expect(repeated._meta?.['io.idem/replayed']).toBeUndefined();
    const executions = await gw.gateway.store.list({ tool: TOGGLE.name });
    expect(executions.map((e) => [e.id, e.state]).sort()).toEqual(
      [
        [ref, 'completed'],
        [fresh, 'completed'],
      ].sort(),
    );
    const journal = await gw.gateway.store.journalFor(fresh);
    expect(journal.find((e) => e.kind === 'repeat')?.detail).toEqual({ repeat_of: ref });

    // The repeat is now what an identical call is answered with.
    const later = await call(client, TOGGLE);
    expect(textOf(later)).toMatch(/^Stopped/);
    expect(note(later)).toContain(`stored result of execution ${fresh}`);
    // Another session (a restarted agent) gets it too, as the retry it may be: the note first.
    const elsewhere = await call(await connect(gw.url), TOGGLE);
    expect(firstTextOf(elsewhere)).toMatch(/^\[idem\] Replayed, not run again/);
    expect(textOf(elsewhere)).toMatch(/^Stopped/);

    // The same repeat sent again (a lost answer) does not run a third time.
    const resent = await repeat(client, ref);
    expect(refOf(resent)).toBe(fresh);
    expect(resent._meta?.['io.idem/replayed']).toBe(true);
    expect(await gw.gateway.store.list({ tool: TOGGLE.name })).toHaveLength(2);
  });

  it('structuredContent stays exactly as the tool gave it, and the SDK client still validates it against the output schema', async () => {
    // Annotated read-only; a contract that deduplicates it, so that it is replayed.
    const gw = await gateway({ tools: { 'get-structured-content': { replay: 'review' } } });
    const client = await connect(gw.url);
    const params = { name: 'get-structured-content', arguments: { location: 'Chicago' } };
    const first = await call(client, params);
    const again = await call(client, params);
    expect(again._meta?.['io.idem/replayed']).toBe(true);
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(again.structuredContent).toEqual({
      temperature: 36,
      conditions: 'Light rain / drizzle',
      humidity: 82,
    });
    expect(storedContentOf(again)).toEqual(first.content);
    expect(again.content).toHaveLength(first.content.length + 1);
    expect(note(again)).toContain('Replayed');
  });

  it('a repeat is refused while the action runs, and for another actor; once finished, its owner can repeat it', async () => {
    const gw = await gateway({ tools: { 'trigger-long-running-operation': { replay: 'review' } } });
    const client = await connect(gw.url);
    const params = { name: 'trigger-long-running-operation', arguments: { duration: 3, steps: 1 } };
    const running = call(client, params);
    let ref = '';
    await vi.waitFor(async () => {
      const [record] = await gw.gateway.store.list({ tool: params.name });
      ref = record?.state === 'dispatched' ? record.id : '';
      expect(ref !== '', 'the operation to be dispatched').toBe(true);
    }, PATIENTLY);
    const refused = await repeat(client, ref);
    expect(idemOf(refused)?.code).toBe('IDEM_IN_FLIGHT');
    expect(textOf(refused)).toContain('A repeat is refused while it runs');
    const done = await running;
    expect(textOf(done)).toContain('Long running operation completed');

    const stranger = await connect(gw.url, 'another-agent');
    expect(idemOf(await repeat(stranger, ref))?.code).toBe('IDEM_UNKNOWN_EXECUTION');
    expect(await gw.gateway.store.list({ tool: params.name })).toHaveLength(1);

    const repeated = await repeat(client, ref);
    expect(textOf(repeated)).toContain('Long running operation completed');
    expect(repeated._meta?.['io.idem/repeat-of']).toBe(ref);
    expect(await gw.gateway.store.list({ tool: params.name })).toHaveLength(2);
  });
});

describe('across gateway processes sharing a data directory', () => {
  it('a replay from the other process says so; a repeat works where the arguments were seen, and says what to do where not', async () => {
    const dataDir = freshDir('shared-data');
    const start = async () => {
      const gw = await Gateway.start(
        GatewayConfigSchema.parse({
          data_dir: dataDir,
          upstreams: { everything: EVERYTHING },
          listen: { http: { host: '127.0.0.1', port: 0 } },
        }),
        { version: 'test', upstreamStderr: 'ignore' },
      );
      open.push(gw);
      return { gw, url: (await gw.serveHttp()).url };
    };
    const one = await start();
    const two = await start();
    const a = await connect(one.url);
    const b = await connect(two.url);

    const first = await call(a, TOGGLE);
    expect(textOf(first)).toMatch(/^Started/);
    const ref = refOf(first);

    // Gateway two never saw the arguments: it runs nothing, retires the stored result, and says how to go on.
    const cannot = await repeat(b, ref);
    expect(idemOf(cannot)?.code).toBe('IDEM_NOT_EXECUTED');
    expect(textOf(cannot)).toContain(`call ${TOGGLE.name} again with the same arguments`);
    const fresh = await call(b, TOGGLE);
    expect(fresh._meta?.['io.idem/replayed']).toBeUndefined();
    expect(textOf(fresh)).toMatch(/^Started/);
    const second = refOf(fresh);
    expect(second).not.toBe(ref);

    // Gateway one now answers with gateway two's execution — marked as the stored result it is.
    const replayed = await call(a, TOGGLE);
    expect(refOf(replayed)).toBe(second);
    expect(note(replayed)).toContain(`stored result of execution ${second}`);
    // ...and the replay taught it the arguments: the repeat runs (on its own upstream, toggled on before).
    const repeated = await repeat(a, second);
    expect(textOf(repeated)).toMatch(/^Stopped/);
    expect(repeated._meta?.['io.idem/repeat-of']).toBe(second);
    expect(await one.gw.store.list({ tool: TOGGLE.name })).toHaveLength(3);

    // The repeats and the retired result leave a journal that verifies, states cross-checked.
    await a.close();
    await b.close();
    await one.gw.close();
    await two.gw.close();
    const verified = await runIdem(
      [
        'audit',
        'verify',
        '--db',
        join(dataDir, 'idem.db'),
        '--public-key',
        join(dataDir, 'journal-signing.pub'),
      ],
      { dataDir },
    );
    expect(verified.stdout).toContain('OK');
    expect(verified.code).toBe(0);
  });
});
