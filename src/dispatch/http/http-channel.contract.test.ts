import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Credentials } from '../../credentials/index.js';
import { channelContract } from '../channel.contract.js';
import { httpActionTool } from './tool.js';

/**
 * HTTP through the channel contract: a counting HTTP target on loopback that
 * records each request's Idempotency-Key, and answers, echoes the bearer
 * token it was sent, or drops the connection once the request arrived. An
 * unreachable target is a port nothing listens on (connection refused).
 */
channelContract('HTTP', () => {
  let server: Server | undefined;
  let close: (() => Promise<void>) | undefined;
  return {
    targetHonoursKey: false,
    async open(behaviour, secrets, secret) {
      const keys: Array<string | null> = [];
      server = createServer((req, res) => {
        const key = req.headers['idempotency-key'];
        keys.push(typeof key === 'string' ? key : null);
        req.resume();
        req.on('end', () => {
          if (behaviour === 'drops') return req.socket.destroy();
          const echoed = behaviour === 'echoes_secret' ? { authorization: req.headers.authorization } : {};
          res.writeHead(201, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ done: true, ...echoed }));
        });
      });
      await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as AddressInfo).port;
      if (behaviour === 'unreachable') {
        // A port that was just open and is now closed: connection refused, nothing sent.
        await new Promise<void>((resolve) => server?.close(() => resolve()));
        server = undefined;
      }
      const credentials = Credentials.fromConfig({ pay: { env: 'PAY_KEY' } }, secrets, {
        env: { PAY_KEY: secret },
      });
      const tool = httpActionTool(
        'contract_tool',
        {
          description: 'An action',
          method: 'POST',
          url: `http://127.0.0.1:${port}/act`,
          body: { order_id: '{order_id}' },
          credential: { name: 'pay', scheme: 'bearer' },
          allow: { addresses: ['127.0.0.1'] },
          timeout: '10s',
          input_schema: { type: 'object', properties: { order_id: { type: 'string' } } },
          contract: { replay: 'keyed' },
        },
        { credentials },
      );
      close = async () => {
        await tool.channel.close();
        server?.closeAllConnections();
        await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      };
      return { channel: tool.channel, args: { order_id: 'o-1' }, far: { received: async () => [...keys] } };
    },
    async cleanup() {
      await close?.();
    },
  };
});
