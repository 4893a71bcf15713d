import { BlockList, isIP } from 'node:net';
import { packageDoc } from '../../support/package-docs.js';

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** Whether a listen address only accepts connections from this machine. A name other than localhost is not trusted to. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare.toLowerCase() === 'localhost') return true;
  const family = isIP(bare);
  if (family === 0) return false;
  // An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is checked as the IPv4 one.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)?.[1];
  if (mapped) return loopback.check(mapped, 'ipv4');
  return loopback.check(bare, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * What the HTTP front without auth means, said at start-up (docs/security.md): the
 * actor is not authenticated, so on anything but loopback it is refused unless
 * the operator says so explicitly.
 */
export function unauthenticatedExposure(options: { host: string; stateless: boolean; allowed: boolean }): {
  refuse: boolean;
  message: string;
} {
  const who = options.stateless
    ? 'stateless mode without auth makes EVERY client one and the same actor: any client can read the status and replay the stored results of every other'
    : "each client's actor is the local user plus the client name it sends, which any client can copy to act as another";
  if (!isLoopbackHost(options.host) && !options.allowed) {
    return {
      refuse: true,
      message:
        `refusing to serve HTTP on ${options.host} without auth: ${who}, and this address is reachable from other machines. ` +
        'Configure auth.bearer tokens (CLI: --api-key-env NAME) or auth.oauth, listen on 127.0.0.1, or set listen.http.allow_unauthenticated: true ' +
        `(CLI: --allow-unauthenticated) if the network in front of the gateway authenticates callers. See ${packageDoc('security.md')}.`,
    };
  }
  return {
    refuse: false,
    message: `the HTTP front on ${options.host} has no auth (neither auth.bearer nor auth.oauth): ${who}. See ${packageDoc('security.md')}.`,
  };
}
