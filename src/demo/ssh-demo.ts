import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { idemCodeOf } from '../executions/answers.js';
import { serveStreamableHttp } from '../library/http.js';
import { Idem } from '../library/idem.js';
import { connect, pollStatus, refOf, summarize } from './agent.js';
import { SSHD_BINARY, sshdAvailable, startSshd } from './sshd.js';

/**
 * An sshd the demo may use: on this machine (the demo counts the command's runs
 * in a file the remote command appends to, which it can only read because the
 * host is local), with the user's private key and the host key's fingerprint.
 */
export interface DemoSshHost {
  host: string;
  port: number;
  user: string;
  /** `SHA256:…`, as ssh-keygen -l prints it. */
  hostKeyFingerprint: string;
  privateKey: string;
  /** A directory on this machine for the run log, the gate file and the markers. */
  dir: string;
}

export interface SshScenarioReport {
  name: string;
  callsSent: number;
  /** Runs of the remote command, counted on the host. */
  runs: number;
  expectedRuns: number;
  agentSaw: string[];
  ok: boolean;
}

/**
 * The SSH action tool scenarios of `idem demo`: an MCP server built with the
 * library offers `restart_service`, which runs a command on `ssh` under a
 * durable marker. Only where an sshd is available (the caller starts one); the
 * agent is the official SDK client over Streamable HTTP on loopback.
 */
export async function runSshDemo(options: {
  ssh: DemoSshHost;
  dataDir: string;
  out: (line: string) => void;
}): Promise<SshScenarioReport[]> {
  const { ssh, out } = options;
  const runLog = join(ssh.dir, 'restarts.log');
  const gate = join(ssh.dir, 'gate');
  mkdirSync(ssh.dir, { recursive: true });
  const idem = await Idem.open({ dataDir: options.dataDir });
  const newServer = () => {
    const server = new McpServer({ name: 'ops', version: '1.0.0' });
    idem.sshTool(server, 'restart_service', {
      description: 'Restart a service on web-1. One request restarts it once.',
      inputSchema: { service: z.string() },
      contract: { replay: 'keyed', timeout: '5s' },
      ssh: {
        host: {
          name: 'web-1',
          host: ssh.host,
          port: ssh.port,
          user: ssh.user,
          credential: 'web-1-key',
          hostKey: ssh.hostKeyFingerprint,
          markerDir: join(ssh.dir, 'markers'),
        },
        // The "restart" logs itself, then holds until the demo lets it finish (a slow service).
        command:
          `echo {{service}} >> ${runLog}; ` +
          `while [ ! -e ${gate} ] && [ -d $(dirname ${gate}) ]; do sleep 0.05; done; echo restarted {{service}}`,
      },
      resolveCredential: async () => ssh.privateKey,
    });
    return server;
  };
  const http = await serveStreamableHttp(idem, newServer);
  out(
    `SSH action tool restart_service → ${ssh.user}@${ssh.host}:${ssh.port} (host key ${ssh.hostKeyFingerprint})\n`,
  );

  const runs = () =>
    existsSync(runLog) ? readFileSync(runLog, 'utf8').split('\n').filter(Boolean).length : 0;
  const restart = (agent: Awaited<ReturnType<typeof connect>>, service: string) =>
    agent.callTool({ name: 'restart_service', arguments: { service } }) as Promise<CallToolResult>;
  const reports: SshScenarioReport[] = [];
  const run = async (
    name: string,
    expectedRuns: number,
    body: (saw: (r: CallToolResult | string) => void) => Promise<{ callsSent: number; ok: boolean }>,
  ) => {
    const before = runs();
    const agentSaw: string[] = [];
    const { callsSent, ok } = await body((r) => agentSaw.push(typeof r === 'string' ? r : oneLine(r)));
    const counted = runs() - before;
    const report = {
      name,
      callsSent,
      runs: counted,
      expectedRuns,
      agentSaw,
      ok: ok && counted === expectedRuns,
    };
    reports.push(report);
    out(`${report.ok ? 'PASS' : 'FAIL'}  ${name}`);
    out(
      `      calls sent: ${callsSent}   command runs counted on the host: ${counted} (expected ${expectedRuns})`,
    );
    for (const line of agentSaw) out(`      agent saw: ${line}`);
    out('');
  };

  try {
    await run('S1. Two concurrent identical restarts (two agent connections)', 1, async (saw) => {
      rmSync(gate, { force: true });
      const [a, b] = await Promise.all([connect(http.url), connect(http.url)]);
      const calls = [restart(a, 'api'), restart(b, 'api')];
      // The one that lost the claim answers at once, while the restart holds; then it may finish.
      const early = await Promise.race(calls);
      writeFileSync(gate, '');
      const results = await Promise.all(calls);
      for (const r of results) saw(r);
      const final = await pollStatus(b, refOf(early));
      saw(`status tool → ${oneLine(final)}`);
      await Promise.all([a.close(), b.close()]);
      return { callsSent: 2, ok: idemCodeOf(early) === 'IDEM_IN_FLIGHT' && !final.isError };
    });

    await run(
      'S2. The restart outlasts the tool timeout; the status tool reads the marker on the host',
      1,
      async (saw) => {
        rmSync(gate, { force: true });
        const agent = await connect(http.url);
        const first = await restart(agent, 'worker');
        saw(first);
        writeFileSync(gate, '');
        const final = await pollStatus(agent, refOf(first));
        saw(`status tool → ${oneLine(final)}`);
        await agent.close();
        return { callsSent: 1, ok: idemCodeOf(first) === 'IDEM_OUTCOME_UNKNOWN' && !final.isError };
      },
    );

    await run('S3. A hostile argument is one word, never a second command', 1, async (saw) => {
      const agent = await connect(http.url);
      const nul = await restart(agent, 'api\0; reboot');
      saw(nul);
      const hostile = await restart(agent, 'cache; rm -rf ~ $(reboot)');
      saw(hostile);
      await agent.close();
      const logged = readFileSync(runLog, 'utf8').includes('cache; rm -rf ~ $(reboot)\n');
      return { callsSent: 2, ok: idemCodeOf(nul) === 'IDEM_INVALID_INPUT' && !hostile.isError && logged };
    });
  } finally {
    await http.close();
    await idem.close();
  }
  return reports;
}

/**
 * The SSH part of `idem demo`: starts a throwaway sshd on loopback, runs the
 * scenarios against it, stops it. Where there is no sshd binary it says so in
 * one line and runs nothing (resolves with no reports): the demo still shows
 * the rest.
 */
export async function runSshScenarios(options: {
  dataDir: string;
  out: (line: string) => void;
  /** Where the sshd binary is looked for (a test points it at a path that does not exist). */
  sshdBinary?: string;
}): Promise<SshScenarioReport[]> {
  const binary = options.sshdBinary ?? SSHD_BINARY;
  if (!sshdAvailable(binary)) {
    options.out(`SSH scenarios skipped: no sshd at ${binary} (install openssh-server)\n`);
    return [];
  }
  const sshd = await startSshd();
  try {
    return await runSshDemo({
      ssh: { ...sshd, dir: join(sshd.dir, 'demo') },
      dataDir: join(options.dataDir, 'ssh'),
      out: options.out,
    });
  } finally {
    await sshd.stop();
  }
}

/** A command's result spans lines (exit code, then its output): one line per answer in the demo's report. */
function oneLine(result: CallToolResult): string {
  return summarize(result)
    .trim()
    .replace(/\s*\n\s*/g, ' | ');
}
