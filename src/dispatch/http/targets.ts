import { isIP } from 'node:net';
import { type AllowedTargets, hostOf, portOf } from './address-guard.js';
import type { HttpToolSpec } from './spec.js';
import { hasPlaceholder } from './template.js';

/** The origin a spec's template names, and where its URLs may lead (spec `allow:` and its defaults). */
export function allowedTargets(
  tool: string,
  spec: HttpToolSpec,
): { origin: string; allowed: AllowedTargets } {
  const match = /^(https?):\/\/([^/?#]*)/.exec(spec.url);
  if (!match) throw new Error(`http_tools.${tool}.url: not an http(s) URL template`);
  const scheme = match[1] as string;
  const authority = match[2] as string;
  const hostPart = authority.startsWith('[')
    ? authority.slice(0, authority.indexOf(']') + 1)
    : (authority.split(':')[0] as string);
  const portPart = authority.slice(hostPart.length + 1);
  const allow = spec.allow ?? {};
  let hosts = allow.hosts?.map((host) => configuredHost(tool, host));
  if (!hosts) {
    if (hasPlaceholder(hostPart))
      throw new Error(
        `http_tools.${tool}: the URL's host comes from the arguments, so allow.hosts must list the hosts it may be`,
      );
    hosts = [hostOf(new URL(`${scheme}://${hostPart}`))];
  }
  let ports = allow.ports;
  if (!ports) {
    if (hasPlaceholder(portPart))
      throw new Error(
        `http_tools.${tool}: the URL's port comes from the arguments, so allow.ports must list the ports it may be`,
      );
    ports = [portPart ? Number(portPart) : portOf(new URL(`${scheme}://x`))];
  }
  return {
    origin: `${scheme}://${authority}`,
    allowed: { schemes: allow.schemes ?? [scheme], hosts, ports, addresses: allow.addresses ?? [] },
  };
}

/**
 * An allow.hosts entry as a URL's hostname spells it — lower case, an
 * internationalised name in punycode, an IPv4 address in dotted decimal — since
 * that is what each call's URL is compared with: `Bücher.example` allows the
 * URL `https://bücher.example/`, whose hostname is `xn--bcher-kva.example`.
 */
function configuredHost(tool: string, host: string): string {
  const where = `http_tools.${tool}.allow.hosts`;
  let url: URL;
  try {
    url = new URL(`http://${isIP(host) === 6 ? `[${host}]` : host}`);
  } catch {
    throw new Error(`${where}: "${host}" is not a host name or address`);
  }
  if (url.port || url.username || url.password || `${url.pathname}${url.search}${url.hash}` !== '/')
    throw new Error(`${where}: "${host}" is more than a host (ports go under allow.ports)`);
  return hostOf(url);
}
