import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { MissingPackageError } from '../errors.js';
import { idemCodeOf } from '../executions/answers.js';
import { GatewayConfigSchema } from '../gateway/config/index.js';
import { Gateway } from '../gateway/gateway.js';
import { serveStreamableHttp } from '../library/http.js';
import { Idem } from '../library/idem.js';
import { loadSsh2 } from '../support/optional-packages.js';
import { connect, pollStatus, refOf, summarize } from './agent.js';
import { SSHD_BINARY, sshdAvailable, startSshd } from './sshd.js';
import { upstreamCommand } from './upstream-command.js';

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
 * The SSH action tool scenarios of `idem demo`: `restart_service`, offered by
 * idem gateway (`ssh_tools:`) or by an MCP server built with the library
 * (`idem.sshTool`), runs a command on `ssh` under a durable marker. Only
 * where an sshd is available (the caller starts one); the agent is the
 * official SDK client over Streamable HTTP on loopback.
 */
export async function runSshDemo(options: {
  ssh: DemoSshHost;
  dataDir: string;
  out: (line: string) => void;
  /** `library` (default): `idem.sshTool` in an MCP server; `gateway`: `ssh_tools:` of idem gateway. */
  via?: 'gateway' | 'library';
  /** With `gateway`: the payment processor its upstream (the charge_card server) is pointed at. */
  processorUrl?: string;
}): Promise<SshScenarioReport[]> {
  const { ssh, out } = options;
  const runLog = join(ssh.dir, 'restarts.log');
  const gate = join(ssh.dir, 'gate');
  mkdirSync(ssh.dir, { recursive: true });
  // The "restart" logs itself, then holds until the demo lets it finish (a slow service).
  const command =
    `echo {{service}} >> ${runLog}; ` +
    `while [ ! -e ${gate} ] && [ -d $(dirname ${gate}) ]; do sleep 0.05; done; echo restarted {{service}}`;
  const inventory = {
    name: 'web-1',
    host: ssh.host,
    port: ssh.port,
    user: ssh.user,
    credential: 'web-1-key',
    hostKey: ssh.hostKeyFingerprint,
    markerDir: join(ssh.dir, 'markers'),
  };
  const description = 'Restart a service on web-1. One request restarts it once.';
  const contract = { replay: 'keyed' as const, timeout: '5s' };
  const via = options.via ?? 'library';
  const http = via === 'gateway' ? await viaGateway() : await viaLibrary();

  /** The tool as `ssh_tools:` of idem gateway, its key a 0600 file named under `credentials:`. */
  async function viaGateway() {
    mkdirSync(options.dataDir, { recursive: true });
    const keyFile = join(options.dataDir, 'web-1.key');
    writeFileSync(keyFile, ssh.privateKey, { mode: 0o600 });
    chmodSync(keyFile, 0o600);
    const gateway = await Gateway.start(
      GatewayConfigSchema.parse({
        data_dir: options.dataDir,
        listen: { http: { host: '127.0.0.1', port: 0 } },
        // A gateway has at least one upstream: the demo's charge_card server.
        upstreams: {
          payments: {
            ...upstreamCommand(),
            env: {
              PROCESSOR_URL: options.processorUrl ?? '',
              IDEM_DATA_DIR: join(options.dataDir, 'upstream'),
            },
          },
        },
        credentials: { [inventory.credential]: { file: keyFile } },
        ssh_hosts: {
          [inventory.name]: {
            host: inventory.host,
            port: inventory.port,
            user: inventory.user,
            credential: inventory.credential,
            host_key: inventory.hostKey,
            marker_dir: inventory.markerDir,
          },
        },
        ssh_tools: {
          restart_service: {
            description,
            host: inventory.name,
            input_schema: {
              type: 'object',
              properties: { service: { type: 'string' } },
              required: ['service'],
            },
            command,
            contract,
          },
        },
      }),
      { version: 'demo', upstreamStderr: 'ignore' },
    );
    const { url } = await gateway.serveHttp();
    return {
      url,
      close: async () => {
        await gateway.close();
        // A throwaway key of a throwaway sshd, but a private key all the same: not left behind.
        rmSync(keyFile, { force: true });
      },
    };
  }

  /** The tool as `idem.sshTool` in an MCP server built with the library. */
  async function viaLibrary() {
    const idem = await Idem.open({ dataDir: options.dataDir });
    const served = await serveStreamableHttp(idem, () => {
      const server = new McpServer({ name: 'ops', version: '1.0.0' });
      idem.sshTool(server, 'restart_service', {
        description,
        inputSchema: { service: z.string() },
        contract,
        ssh: { host: inventory, command },
        resolveCredential: async () => ssh.privateKey,
      });
      return server;
    });
    return {
      url: served.url,
      close: async () => {
        await served.close();
        await idem.close();
      },
    };
  }

  out(
    `SSH action tool restart_service (${via === 'gateway' ? 'idem gateway ssh_tools:' : 'idem.sshTool'}) → ${ssh.user}@${ssh.host}:${ssh.port} (host key ${ssh.hostKeyFingerprint})\n`,
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
  }
  return reports;
}

/**
 * The SSH part of `idem demo`: starts a throwaway sshd on loopback, runs the
 * scenarios against it, stops it. Where there is no sshd binary, or ssh2 is
 * not installed (an optional peer), it says so in one line and runs nothing
 * (resolves with no reports): the demo still shows the rest.
 */
export async function runSshScenarios(options: {
  dataDir: string;
  out: (line: string) => void;
  via: 'gateway' | 'library';
  processorUrl?: string;
  /** Where the sshd binary is looked for (a test points it at a path that does not exist). */
  sshdBinary?: string;
}): Promise<SshScenarioReport[]> {
  const binary = options.sshdBinary ?? SSHD_BINARY;
  if (!sshdAvailable(binary)) {
    options.out(`SSH scenarios skipped: no sshd at ${binary} (install openssh-server)\n`);
    return [];
  }
  const missing = await loadSsh2().then(
    () => undefined,
    (error: unknown) => {
      if (error instanceof MissingPackageError) return error;
      throw error;
    },
  );
  if (missing) {
    options.out(`SSH scenarios skipped: ${missing.message}\n`);
    return [];
  }
  const sshd = await startSshd();
  try {
    return await runSshDemo({
      ssh: { ...sshd, dir: join(sshd.dir, 'demo') },
      dataDir: join(options.dataDir, 'ssh'),
      out: options.out,
      via: options.via,
      ...(options.processorUrl ? { processorUrl: options.processorUrl } : {}),
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
