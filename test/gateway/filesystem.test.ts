/**
 * A real third-party upstream behind the gateway: the reference filesystem
 * server (@modelcontextprotocol/server-filesystem, stdio, one temporary
 * allowed directory), the gateway on loopback HTTP, and the official SDK
 * client whose fetch loses the first response of write_file, edit_file and
 * move_file. Each operation is checked on disk: a second execution of any of
 * them would be visible, and the control at the end shows that it is.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/gateway/config/index.js';
import { type RunningGateway, startHttpGateway } from '../support/http-gateway.js';
import { type LostResponse, losingFetch, lostResult } from '../support/losing-fetch.js';
import { packageBin } from '../support/node22.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { storedContentOf, textOf } from '../support/tool-results.js';

const SERVER = packageBin('@modelcontextprotocol/server-filesystem', 'mcp-server-filesystem');
const EFFECT_TOOLS = ['write_file', 'edit_file', 'move_file'];

/**
 * The contracts for the filesystem server's writing tools.
 * - replay `review`: none of them is safe to repeat blindly (an edit applied
 *   twice changes the file twice; a move repeated fails or moves something
 *   else; a write repeated later overwrites whatever changed in between), and
 *   the server has no status tool to ask, so an unknown outcome goes to a human.
 * - scope `actor`: a retry from a new session or a restarted agent (same
 *   client) is still the same intent.
 * - attach_window `5m`: long enough for any retry loop; short enough that the
 *   same edit made deliberately later is a new action (the 15-minute default
 *   would silently swallow a deliberate repeat for longer).
 * - timeout `30s`: a file operation that has not answered by then is unknown.
 */
const FILE_CONTRACT = { replay: 'review', scope: 'actor', attach_window: '5m', timeout: '30s' } as const;

/** The world before the calls. */
function prepare(root: string) {
  const files = {
    report: join(root, 'report.txt'),
    notes: join(root, 'notes.txt'),
    draft: join(root, 'draft.txt'),
    archived: join(root, 'archive', 'draft.txt'),
  };
  writeFileSync(files.notes, 'line one\n');
  writeFileSync(files.draft, 'draft body\n');
  mkdirSync(join(root, 'archive'));
  return files;
}

/** The three operations, each one whose repetition shows on disk (see `afterLoss`). */
function operations(files: ReturnType<typeof prepare>) {
  return [
    { name: 'write_file', arguments: { path: files.report, content: 'report v1\n' } },
    {
      name: 'edit_file',
      // Applied twice, "line one" is found again and a second "line two" appears.
      arguments: { path: files.notes, edits: [{ oldText: 'line one', newText: 'line one\nline two' }] },
    },
    { name: 'move_file', arguments: { source: files.draft, destination: files.archived } },
  ];
}

/**
 * Runs when a response was lost, before the retry: the world moves on in a way
 * that makes a second execution visible. Someone else rewrites the report (a
 * repeated write_file would overwrite it), and a new draft appears where the
 * moved one was (a repeated move_file would fail: the destination exists).
 */
function worldMovesOn(files: ReturnType<typeof prepare>) {
  return (lost: LostResponse) => {
    if (lost.tool === 'write_file') writeFileSync(files.report, 'rewritten by someone else\n');
    if (lost.tool === 'move_file') writeFileSync(files.draft, 'a new draft\n');
  };
}

/** Every file exactly as one execution of each operation (plus the world moving on) leaves it. */
function expectEachOnce(files: ReturnType<typeof prepare>) {
  expect({
    report: readFileSync(files.report, 'utf8'),
    notes: readFileSync(files.notes, 'utf8'),
    draft: readFileSync(files.draft, 'utf8'),
    archived: readFileSync(files.archived, 'utf8'),
  }).toEqual({
    report: 'rewritten by someone else\n',
    notes: 'line one\nline two\n',
    draft: 'a new draft\n',
    archived: 'draft body\n',
  });
}

/** The filesystem server's own success answer for each operation. */
function expectRealResult(tool: string, result: CallToolResult, files: ReturnType<typeof prepare>) {
  expect(result.isError ?? false).toBe(false);
  // What the tool answered, wherever Idem's replay note stands.
  const text = textOf(result);
  if (tool === 'write_file') expect(text).toBe(`Successfully wrote to ${files.report}`);
  if (tool === 'edit_file') expect(text).toContain('+line two');
  if (tool === 'move_file') expect(text).toBe(`Successfully moved ${files.draft} to ${files.archived}`);
}

async function connect(url: string, fetch: FetchLike | undefined, name = 'fs-agent') {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), fetch ? { fetch } : {}));
  return client;
}

function gatewayConfig(root: string, tools: GatewayConfig['tools']) {
  return {
    upstreams: { fs: { command: process.execPath, args: [SERVER, root] } },
    tools,
  };
}

const contracts = Object.fromEntries(EFFECT_TOOLS.map((t) => [t, FILE_CONTRACT]));

describe('server-filesystem behind idem gateway: lost responses, each file operation once', () => {
  let running: RunningGateway | undefined;
  const clients: Client[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close().catch(() => {});
    await running?.close();
    running = undefined;
  });
  afterAll(() => removeTemporaries());

  it('publishes the upstream tools with honest annotations', async () => {
    const root = freshDir('fs-root');
    running = await startHttpGateway(gatewayConfig(root, contracts));
    const client = await connect(running.url, undefined);
    clients.push(client);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['read_text_file', 'list_directory', ...EFFECT_TOOLS, 'idem_execution_status'])
      expect(byName.has(name), name).toBe(true);
    // Each keeps its own idempotentHint (docs/contracts.md, one rule), declared contract or not.
    expect(byName.get('write_file')?.annotations).toMatchObject({
      readOnlyHint: false,
      idempotentHint: true,
    });
    expect(byName.get('edit_file')?.annotations).toMatchObject({ idempotentHint: false });
    expect(byName.get('create_directory')?.annotations).toMatchObject({ idempotentHint: true });
    expect(byName.get('read_text_file')?.annotations).toMatchObject({ readOnlyHint: true });
  });

  it('(a) the fetch layer re-sends the same POST (same JSON-RPC id): one execution each, the real result', async () => {
    const root = freshDir('fs-root');
    const files = prepare(root);
    running = await startHttpGateway(gatewayConfig(root, contracts));
    const losing = losingFetch({ tools: EFFECT_TOOLS, mode: 'resend', afterLoss: worldMovesOn(files) });
    const client = await connect(running.url, losing.fetch);
    clients.push(client);

    for (const op of operations(files)) {
      const result = (await client.callTool(op)) as CallToolResult;
      expectRealResult(op.name, result, files);
      const lost = losing.lost.find((l) => l.tool === op.name) as LostResponse;
      // The lost response was the real answer (the call ran), and the retry got the same one.
      expectRealResult(op.name, lostResult(lost), files);
      expect(result.content).toEqual(lostResult(lost).content);
      // Answered by its receipt (layer 1): the very reply that was lost, not a replay of a stored execution.
      expect(result._meta).toEqual(lostResult(lost)._meta);
      expect(result._meta?.['io.idem/replayed']).toBeUndefined();
    }
    // Each call was sent twice with the same id, and each response was lost once.
    expect(losing.lost.map((l) => l.tool)).toEqual(EFFECT_TOOLS);
    for (const tool of EFFECT_TOOLS) {
      const sent = losing.calls.filter((c) => c.tool === tool);
      expect(sent).toHaveLength(2);
      expect(sent[0]?.id).toBe(sent[1]?.id);
    }
    expectEachOnce(files);
  });

  it.each([
    ['in the same session', false],
    ['from a new session (a restarted agent)', true],
  ])(
    '(b) the agent calls again with a new request id %s: one execution each, the stored real result',
    async (_label, newSession) => {
      const root = freshDir('fs-root');
      const files = prepare(root);
      running = await startHttpGateway(gatewayConfig(root, contracts));
      const losing = losingFetch({ tools: EFFECT_TOOLS, mode: 'fail', afterLoss: worldMovesOn(files) });
      const first = await connect(running.url, losing.fetch);
      clients.push(first);

      for (const op of operations(files)) {
        await expect(first.callTool(op)).rejects.toThrow(/response to .* was lost/);
        const retrying = newSession ? await connect((running as RunningGateway).url, undefined) : first;
        if (retrying !== first) clients.push(retrying);
        const result = (await retrying.callTool(op)) as CallToolResult;
        expectRealResult(op.name, result, files);
        // The stored result of the one execution, marked as a replay.
        expect(result._meta?.['io.idem/replayed']).toBe(true);
        const lost = lostResult(losing.lost.find((l) => l.tool === op.name) as LostResponse);
        // The original content as it was, and the note that says it is a replay: first where this
        // session had the answer already (the gateway wrote it; the loss was on the way), else after.
        expect(storedContentOf(result)).toEqual(lost.content);
        expect(result.content).toHaveLength(lost.content.length + 1);
        expect(result._meta?.['io.idem/execution-id']).toBe(lost._meta?.['io.idem/execution-id']);
      }
      expectEachOnce(files);
    },
  );

  it('control: the same retries without contracts that deduplicate (read_only) do every operation twice', async () => {
    // Proves the checks above can fail: passed straight through, each retry runs again.
    const root = freshDir('fs-root');
    const files = prepare(root);
    const passThrough = Object.fromEntries(EFFECT_TOOLS.map((t) => [t, { replay: 'read_only' as const }]));
    running = await startHttpGateway(gatewayConfig(root, passThrough));
    const losing = losingFetch({ tools: EFFECT_TOOLS, mode: 'fail', afterLoss: worldMovesOn(files) });
    const client = await connect(running.url, losing.fetch);
    clients.push(client);
    const results: CallToolResult[] = [];
    for (const op of operations(files)) {
      await expect(client.callTool(op)).rejects.toThrow(/was lost/);
      results.push((await client.callTool(op)) as CallToolResult);
    }
    expect(readFileSync(files.report, 'utf8')).toBe('report v1\n'); // the other writer's change is gone
    expect(readFileSync(files.notes, 'utf8')).toBe('line one\nline two\nline two\n'); // edited twice
    expect(results[2]?.isError).toBe(true); // moved twice: the second move fails
    expect(textOf(results[2])).toMatch(/already exists/);
    expect(existsSync(files.draft)).toBe(true);
  });
});
