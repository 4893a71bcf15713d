import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { Credentials } from '../../credentials/index.js';
import { startSshd, type TestSshd } from '../../demo/sshd.js';
import { channelContract } from '../channel.contract.js';
import { SshChannel } from './ssh-channel.js';

let sshd: TestSshd;
beforeAll(async () => {
  sshd = await startSshd();
});
afterAll(() => sshd?.stop());

let cases = 0;

/**
 * SSH through the channel contract, at a real sshd on loopback (the host is
 * this machine, so the test reads what the command did): the command logs
 * the marker it runs under — the execution id — before anything else; a far
 * side that drops has its connections cut once the command has logged; an
 * unreachable one is a credential that does not resolve (nothing connects).
 * The secret it echoes is its own private key.
 */
channelContract('SSH', () => {
  let release: (() => void) | undefined;
  return {
    targetHonoursKey: true,
    async open(behaviour, secrets) {
      const dir = join(sshd.dir, `contract-${++cases}`);
      mkdirSync(dir);
      const log = join(dir, 'received.log');
      const gate = join(dir, 'gate');
      const keyFile = join(dir, 'key');
      writeFileSync(keyFile, sshd.privateKey, { mode: 0o600 });
      // The command's stdout is its marker's stdout file: its directory is named by the execution id.
      const logMarker = `marker=$(readlink /proc/$$/fd/1); echo "$marker" >> ${log}`;
      const command = {
        answers: `${logMarker}; echo done {{order_id}}`,
        unreachable: `${logMarker}; echo done {{order_id}}`,
        echoes_secret: `${logMarker}; cat ${keyFile}`,
        // Held until the test ends, or its directory is gone (a command outlives its connection).
        drops: `${logMarker}; while [ ! -e ${gate} ] && [ -d ${dir} ]; do sleep 0.05; done`,
      }[behaviour];
      const credentials = Credentials.fromConfig({ deploy: { env: 'DEPLOY_KEY' } }, secrets, {
        env: behaviour === 'unreachable' ? {} : { DEPLOY_KEY: sshd.privateKey },
      });
      const channel = new SshChannel(
        {
          host: {
            name: 'contract-host',
            host: sshd.host,
            port: sshd.port,
            user: sshd.user,
            credential: 'deploy',
            hostKey: sshd.hostKeyFingerprint,
            markerDir: join(dir, 'markers'),
          },
          command,
          timeoutMs: 20_000,
        },
        async (name) => (await credentials.resolve(name)).value,
        () => credentials.knownValues(),
      );
      const received = async () =>
        existsSync(log)
          ? readFileSync(log, 'utf8')
              .split('\n')
              .filter(Boolean)
              .map((path) => basename(dirname(path)))
          : [];
      if (behaviour === 'drops') {
        // The far side drops the connection once the command has arrived (a condition, not a guess).
        const watch = setInterval(() => {
          if (!existsSync(log)) return;
          clearInterval(watch);
          sshd.dropConnections();
        }, 20);
        release = () => {
          clearInterval(watch);
          writeFileSync(gate, '');
        };
      }
      return {
        channel,
        args: { order_id: 'o-1' },
        far: { received },
        ...(behaviour === 'echoes_secret' ? { echoed: sshd.privateKey } : {}),
      };
    },
    async cleanup() {
      release?.();
      release = undefined;
    },
  };
});
