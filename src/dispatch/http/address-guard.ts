import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { DispatchRefusedError, NotDispatchedError } from '../../errors.js';

/** Where one tool's URLs may lead (spec `allow:` with its defaults filled in). */
export interface AllowedTargets {
  schemes: readonly string[];
  hosts: readonly string[];
  ports: readonly number[];
  /** Addresses in a refused range that this tool may still reach, each named exactly. */
  addresses: readonly string[];
}

/** An address the connection is pinned to. */
export interface PinnedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name once; the connection then goes to what this returned, nothing else. */
export type ResolveHost = (host: string) => Promise<PinnedAddress>;

/**
 * Ranges that no tool reaches unless it names the address: loopback, private
 * (RFC 1918, unique-local), link-local, carrier-grade NAT, "this network",
 * benchmarking, documentation, multicast and reserved — the cloud metadata
 * endpoints (169.254.169.254, fd00:ec2::254) are inside link-local and
 * unique-local. IPv6 forms that carry an IPv4 address are refused whole
 * (IPv4-compatible, IPv4-translated, NAT64, 6to4, Teredo): which IPv4 host
 * they reach is decided by a translator or tunnel this check cannot see. An
 * IPv4-mapped address (::ffff:a.b.c.d), which the kernel connects to over
 * IPv4, is judged as the IPv4 address it carries. Order matters only for the
 * label: the first range that holds an address names it.
 */
const REFUSED_RANGES: ReadonlyArray<[string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', '"this network"'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['::', 96, 'ipv6', 'IPv4-compatible (deprecated)'],
  ['::ffff:0:0:0', 96, 'ipv6', 'IPv4-translated'],
  ['fc00::', 7, 'ipv6', 'unique-local (cloud metadata)'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
  ['64:ff9b::', 96, 'ipv6', 'NAT64'],
  ['64:ff9b:1::', 48, 'ipv6', 'NAT64'],
  ['100::', 64, 'ipv6', 'discard-only'],
  ['2001::', 32, 'ipv6', 'Teredo'],
  ['2001:db8::', 32, 'ipv6', 'documentation'],
  ['2002::', 16, 'ipv6', '6to4'],
];

const ranges = REFUSED_RANGES.map(([network, prefix, type, label]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, type);
  return { list, type, label };
});

/** Judgements already made, by address as written: the same few addresses come back call after call. */
const judged = new Map<string, string | undefined>();
/** Bounds `judged`: addresses come from DNS answers for hosts that arguments may name. */
const MAX_JUDGED = 1024;

/**
 * The range an address is refused for, if any. An IPv4-mapped IPv6 address is
 * judged as its IPv4 address however it is written: BlockList matches
 * `::ffff:7f00:1` — how a URL spells `[::ffff:127.0.0.1]` — against the IPv4
 * ranges itself, which a pattern for the dotted form alone would miss.
 */
export function refusedRange(address: string): string | undefined {
  if (judged.has(address)) return judged.get(address);
  const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  const label = ranges.find(
    (r) => (type === 'ipv6' || r.type === 'ipv4') && r.list.check(address, type),
  )?.label;
  if (judged.size >= MAX_JUDGED) judged.clear();
  judged.set(address, label);
  return label;
}

/**
 * One list per address a tool's config names (allow.hosts, allow.addresses),
 * built once: they are compared with on every call. Bounded by the config,
 * since only configured addresses are ever the first argument of sameAddress.
 */
const addressLists = new Map<string, { list: BlockList; family: number }>();

/** Same address, however written (`::1` and `0:0:0:0:0:0:0:1`); `configured` comes from a tool's config. */
function sameAddress(configured: string, address: string): boolean {
  let entry = addressLists.get(configured);
  if (!entry) {
    const family = isIP(configured);
    const list = new BlockList();
    if (family !== 0) list.addAddress(configured, family === 6 ? 'ipv6' : 'ipv4');
    entry = { list, family };
    addressLists.set(configured, entry);
  }
  if (entry.family === 0 || entry.family !== isIP(address)) return false;
  return entry.list.check(address, entry.family === 6 ? 'ipv6' : 'ipv4');
}

/** Scheme, host and port of a URL against the tool's lists; throws DispatchRefusedError naming what is not allowed. */
export function checkUrl(url: URL, allowed: AllowedTargets): void {
  const scheme = url.protocol.replace(/:$/, '');
  if (!allowed.schemes.includes(scheme))
    throw new DispatchRefusedError(
      `scheme ${scheme} is not one this tool may use (${allowed.schemes.join(', ')})`,
    );
  if (url.username || url.password) throw new DispatchRefusedError('a URL with user-info is refused');
  const host = hostOf(url);
  if (!allowed.hosts.some((h) => h.toLowerCase() === host || sameAddress(h, host)))
    throw new DispatchRefusedError(`host ${host} is not one this tool may reach`);
  const port = portOf(url);
  if (!allowed.ports.includes(port))
    throw new DispatchRefusedError(
      `port ${port} is not one this tool may reach (${allowed.ports.join(', ')})`,
    );
}

/**
 * Resolves the URL's host once and judges the address the connection will be
 * pinned to: an address in a refused range is refused unless the tool names
 * it. A name that does not resolve is not an error of the tool: nothing was
 * sent, and a retry may find it.
 */
export async function pinAddress(
  url: URL,
  allowed: AllowedTargets,
  resolveHost: ResolveHost,
): Promise<PinnedAddress> {
  const host = hostOf(url);
  const literal = isIP(host);
  let pinned: PinnedAddress;
  if (literal !== 0) pinned = { address: host, family: literal as 4 | 6 };
  else {
    try {
      pinned = await resolveHost(host);
    } catch (error) {
      throw new NotDispatchedError(
        `host ${host} could not be resolved (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  const range = refusedRange(pinned.address);
  if (range && !allowed.addresses.some((a) => sameAddress(a, pinned.address)))
    throw new DispatchRefusedError(
      `${host} resolves to ${pinned.address}, a ${range} address this tool may not reach (allow.addresses names the ones it may)`,
    );
  return pinned;
}

export const resolveWithDns: ResolveHost = async (host) => {
  const found = await lookup(host, { verbatim: true });
  return { address: found.address, family: found.family === 6 ? 6 : 4 };
};

/** The host without IPv6 brackets, lower-case. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}
