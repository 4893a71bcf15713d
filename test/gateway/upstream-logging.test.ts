import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { IDEM_CLI } from '../support/idem-cli.js';
import { REPO_ROOT } from '../support/node22.js';
import { runIdem } from '../support/run-cli.js';
import { freshDir, removeTemporaries } from '../support/temp-dirs.js';

/**
 * Issue 26.3: an upstream that cannot be started is said on stderr at once,
 * and the log can be JSON lines for operators (`--log-format json`).
 */
afterAll(() => removeTemporaries());

describe('idem gateway -- <a command that does not exist>', () => {
  it('the client gets the reason in its initialize error; stderr says it at once, as a JSON line with --log-format json', async () => {
    let stderr = '';
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [IDEM_CLI, 'gateway', '--log-format', 'json', '--', 'idem-no-such-command'],
      cwd: REPO_ROOT,
      env: { ...(process.env as Record<string, string>), IDEM_DATA_DIR: freshDir('nosuchcmd-data') },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const client = new Client({ name: 'agent', version: '1' });
    await expect(client.connect(transport)).rejects.toThrow(
      /no upstream could be started \(idem-no-such-command: spawn idem-no-such-command ENOENT\)/,
    );
    await client.close().catch(() => {});
    const lines = stderr
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      level: 'error',
      msg: expect.stringMatching(
        /^upstream idem-no-such-command could not be started: spawn idem-no-such-command ENOENT; retrying in \d+ ms/,
      ),
      upstream: 'idem-no-such-command',
      session: expect.any(String),
    });
    // And that the session gave up (so the retry announced above will not happen).
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        msg: expect.stringMatching(/^initialize refused: no upstream could be started/),
      }),
    );
  }, 60_000);

  it('an unknown --log-level is refused, naming the levels', async () => {
    const refused = await runIdem(['gateway', '--log-level', 'verbose', '--', 'true'], {
      dataDir: freshDir('log-level'),
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--log-level verbose: expected one of error, warn, info, debug');
  }, 60_000);
});
