import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, ProtocolError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';
import { textOf } from '../support/tool-results.js';
import { PATIENTLY } from '../support/wait.js';
import { fixtureStdioCommand, TASKS_UPSTREAM_PATH } from './harness.js';

/**
 * The tasks scenarios' upstream (tasks-upstream.ts) does what the scenarios
 * expect of each tool, with no tasks of its own, for a client of either era:
 * the v2 SDK client pinned to 2026-07-28 (input comes as `input_required`,
 * which the client answers by calling again) and in its legacy mode
 * (2025-11-25: input comes as elicitation requests the SDK pushes, a round's
 * requests at once).
 */

afterAll(() => removeTemporaries());

/** A client that accepts every elicitation (confirm, and a numbered name), each once `hold` lets it go. */
async function connect(mode: 'modern' | 'legacy', hold: (asked: number) => boolean = () => true) {
  const asked: string[] = [];
  const client = new Client(
    { name: `tasks-upstream-${mode}`, version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: mode === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
    },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    await vi.waitFor(() => expect(hold(asked.length)).toBe(true), PATIENTLY);
    return { action: 'accept' as const, content: { confirm: true, name: `answer-${asked.length}` } };
  });
  await client.connect(
    new StdioClientTransport({ ...fixtureStdioCommand([], TASKS_UPSTREAM_PATH), stderr: 'ignore' }),
  );
  const call = (name: string, args: Record<string, unknown> = {}) =>
    client.callTool({ name, arguments: args }) as Promise<Record<string, unknown>>;
  return { client, asked, call };
}

describe.each(['modern', 'legacy'] as const)('tasks-upstream, %s client', (mode) => {
  it('lists the scenarios tools and no task support', async () => {
    const { client } = await connect(mode);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        'confirm_delete',
        'failing_job',
        'greet',
        'multi_input',
        'protocol_error_job',
        'slow_compute',
        'test_tool_with_task',
      ]);
      expect(tools.filter((t) => 'execution' in t && t.execution !== undefined)).toEqual([]);
      const capabilities = client.getServerCapabilities() as Record<string, unknown>;
      expect(capabilities.tasks).toBeUndefined();
      expect(capabilities.extensions).toBeUndefined();
    } finally {
      await client.close();
    }
  });

  it('answers each tool as the scenarios expect', async () => {
    const { client, call } = await connect(mode);
    try {
      expect(textOf(await call('greet', { name: 'World' }))).toBe('Hello, World!');
      expect(textOf(await call('slow_compute', { seconds: 0, label: 'instant' }))).toMatch(
        /^Computed instant/,
      );
      const failed = await call('failing_job', { seconds: 0 });
      expect(failed.isError).toBe(true);
      const thrown = await call('protocol_error_job').catch((error: unknown) => error);
      expect(thrown).toBeInstanceOf(ProtocolError);
      expect((thrown as ProtocolError).code).toBe(-32603);
    } finally {
      await client.close();
    }
  });

  it('slow_compute works until its release file exists', async () => {
    const { client, call } = await connect(mode);
    try {
      const release = join(freshDir('tasks-upstream'), 'release');
      let settled = false;
      const computing = call('slow_compute', { release_file: release, label: 'held' }).finally(() => {
        settled = true;
      });
      // Another call answered meanwhile, and this one still works: released by the test, not a timer.
      expect(textOf(await call('greet', { name: 'meanwhile' }))).toBe('Hello, meanwhile!');
      expect(settled).toBe(false);
      writeFileSync(release, '');
      expect(textOf(await computing)).toMatch(/^Computed held/);
    } finally {
      await client.close();
    }
  });

  it('confirm_delete asks one confirmation, then completes', async () => {
    const { client, asked, call } = await connect(mode);
    try {
      expect(textOf(await call('confirm_delete', { filename: 'a.txt' }))).toBe('Deleted a.txt');
      expect(asked).toEqual(['Delete a.txt?']);
    } finally {
      await client.close();
    }
  });

  it('multi_input asks two inputs in one round, then completes', async () => {
    // Each answer waits until both were asked: a round that asked one at a time would never end.
    const { client, asked, call } = await connect(mode, (count) => mode === 'modern' || count >= 2);
    try {
      expect(textOf(await call('multi_input'))).toMatch(/^Inputs received: answer-\d, answer-\d$/);
      expect(asked.sort()).toEqual(['The first input?', 'The second input?']);
    } finally {
      await client.close();
    }
  });

  it('test_tool_with_task asks a name first and names it in its result', async () => {
    const { client, asked, call } = await connect(mode);
    try {
      expect(textOf(await call('test_tool_with_task'))).toMatch(/^Hello, answer-1!/);
      expect(asked).toEqual(['What is your name?']);
    } finally {
      await client.close();
    }
  });
});
