/**
 * Webhook targets must be public: a merchant must not be able to make Splitline call its own
 * network (metadata services, databases, admin ports). Checked at registration and again for
 * every connection at delivery time, so a DNS answer that changes later is caught too.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { InvalidInput } from '../lib/errors.ts';

/**
 * Every range of IANA's IPv4 and IPv6 Special-Purpose Address Registries (as of 2025), plus
 * multicast and the deprecated ranges still routed somewhere. A webhook has no business with any
 * of them, including the ones the registries mark globally reachable (anycast services, AS112):
 * a merchant's endpoint lives at an ordinary unicast address.
 */
export const REFUSED_IPV4: readonly (readonly [string, number, string])[] = [
  ['0.0.0.0', 8, '"this network" (RFC 791)'],
  ['10.0.0.0', 8, 'private use (RFC 1918)'],
  ['100.64.0.0', 10, 'shared address space, carrier-grade NAT (RFC 6598)'],
  ['127.0.0.0', 8, 'loopback (RFC 1122)'],
  ['169.254.0.0', 16, 'link local, cloud metadata (RFC 3927)'],
  ['172.16.0.0', 12, 'private use (RFC 1918)'],
  ['192.0.0.0', 24, 'IETF protocol assignments: DS-Lite, PCP and TURN anycast, NAT64 discovery (RFC 6890)'],
  ['192.0.2.0', 24, 'documentation TEST-NET-1 (RFC 5737)'],
  ['192.31.196.0', 24, 'AS112-v4 (RFC 7535)'],
  ['192.52.193.0', 24, 'AMT (RFC 7450)'],
  ['192.88.99.0', 24, 'deprecated 6to4 relay anycast (RFC 7526)'],
  ['192.168.0.0', 16, 'private use (RFC 1918)'],
  ['192.175.48.0', 24, 'direct delegation AS112 service (RFC 7534)'],
  ['198.18.0.0', 15, 'benchmarking (RFC 2544)'],
  ['198.51.100.0', 24, 'documentation TEST-NET-2 (RFC 5737)'],
  ['203.0.113.0', 24, 'documentation TEST-NET-3 (RFC 5737)'],
  ['224.0.0.0', 4, 'multicast (RFC 5771)'],
  ['240.0.0.0', 4, 'reserved, and 255.255.255.255 limited broadcast (RFC 1112, RFC 919)'],
];

export const REFUSED_IPV6: readonly (readonly [string, number, string])[] = [
  ['::', 96, 'unspecified, loopback and the deprecated IPv4-compatible addresses (RFC 4291)'],
  ['::ffff:0:0:0', 96, 'IPv4-translated addresses, SIIT (RFC 6145)'],
  ['64:ff9b::', 96, 'IPv4/IPv6 translation, NAT64 well-known prefix (RFC 6052)'],
  ['64:ff9b:1::', 48, 'local-use IPv4/IPv6 translation (RFC 8215)'],
  ['100::', 64, 'discard-only (RFC 6666)'],
  ['100:0:0:1::', 64, 'dummy IPv6 prefix (RFC 9780)'],
  ['2001::', 23, 'IETF protocol assignments: Teredo 2001::/32, PCP/TURN/DNS-SD anycast, benchmarking 2001:2::/48, AMT, AS112-v6, ORCHID and ORCHIDv2, drone remote ID (RFC 2928)'],
  ['2001:db8::', 32, 'documentation (RFC 3849)'],
  ['2002::', 16, '6to4, which carries an IPv4 address of any kind (RFC 3056)'],
  ['2620:4f:8000::', 48, 'direct delegation AS112 service (RFC 7534)'],
  ['3fff::', 20, 'documentation (RFC 9637)'],
  ['5f00::', 16, 'segment routing SIDs (RFC 9602)'],
  ['fc00::', 7, 'unique local (RFC 4193)'],
  ['fe80::', 10, 'link-local unicast (RFC 4291)'],
  ['fec0::', 10, 'deprecated site-local (RFC 3879)'],
  ['ff00::', 8, 'multicast (RFC 4291)'],
];

const blocked = new BlockList();
for (const [net, prefix] of REFUSED_IPV4) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of REFUSED_IPV6) blocked.addSubnet(net, prefix, 'ipv6');

/** The eight 16-bit groups of an address isIP() calls IPv6 (a trailing dotted IPv4 part included). */
function ipv6Groups(ip: string): number[] {
  // a.b.c.d at the end stands for two groups: rewrite it as them.
  const text = ip.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, a: string, b: string, c: string, d: string) =>
    `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`,
  );
  const [head, tail] = text.split('::') as [string, string | undefined];
  const groups = (part: string | undefined) => (part === undefined || part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = groups(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d, in any notation) carries. */
function mappedIpv4(ip: string): string | undefined {
  const g = ipv6Groups(ip);
  if (g.slice(0, 5).some((x) => x !== 0) || g[5] !== 0xffff) return undefined;
  return `${g[6]! >> 8}.${g[6]! & 0xff}.${g[7]! >> 8}.${g[7]! & 0xff}`;
}

export function isPrivateAddress(ip: string): boolean {
  // A zone index (fe80::1%eth0) names an interface: only link-local addresses carry one.
  if (ip.includes('%')) return true;
  const family = isIP(ip);
  if (family === 0) return true;
  if (family === 6) {
    // IPv4-mapped addresses are judged by the IPv4 address they carry.
    const mapped = mappedIpv4(ip);
    if (mapped !== undefined) return blocked.check(mapped, 'ipv4');
    return blocked.check(ip, 'ipv6');
  }
  return blocked.check(ip, 'ipv4');
}

/** The loopback ranges, 127.0.0.0/8 and ::1 (IPv4-mapped forms judged by their IPv4 address). */
export function isLoopbackAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return ip.startsWith('127.');
  if (family !== 6 || ip.includes('%')) return false;
  const mapped = mappedIpv4(ip);
  if (mapped !== undefined) return mapped.startsWith('127.');
  const g = ipv6Groups(ip);
  return g.slice(0, 7).every((x) => x === 0) && g[7] === 1;
}

export interface UrlPolicy {
  /** Every address, private ranges included, and plain http (WEBHOOK_ALLOW_PRIVATE, tests only). */
  allowPrivate: boolean;
  /**
   * Loopback targets (http://localhost, http://127.0.0.1), over http or https: on the dev chain, so
   * a merchant can try webhooks against a receiver on their own computer. Other private ranges stay
   * refused.
   */
  allowLoopback?: boolean;
}

/**
 * The webhook target policy of a configuration: loopback is allowed on the dev chain only, never
 * with NODE_ENV=production (which refuses CHAIN=dev anyway); private ranges only with
 * WEBHOOK_ALLOW_PRIVATE.
 */
export function webhookTargetPolicy(config: { chain: string; nodeEnv: string; webhookAllowPrivate: boolean }): Required<UrlPolicy> {
  return {
    allowPrivate: config.webhookAllowPrivate,
    allowLoopback: config.chain === 'dev' && config.nodeEnv !== 'production',
  };
}

/** Whether a connection to `ip` is refused under `policy`. */
export function isRefusedAddress(ip: string, policy: UrlPolicy): boolean {
  if (policy.allowPrivate || !isPrivateAddress(ip)) return false;
  return !(policy.allowLoopback === true && isLoopbackAddress(ip));
}

/** Parses and checks a webhook URL; resolves its host and refuses private addresses. */
export async function assertPublicUrl(raw: unknown, policy: UrlPolicy): Promise<URL> {
  if (typeof raw !== 'string' || raw.length > 2048) throw new InvalidInput('url must be an absolute https URL');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidInput('url must be an absolute https URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InvalidInput('url must use https');
  if (url.username !== '' || url.password !== '') throw new InvalidInput('url must not carry credentials');
  if (policy.allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (policy.allowLoopback === true) {
    // Only a host that is loopback and nothing else may use plain http.
    const addresses = isIP(host) !== 0 ? [host] : await resolveAll(host).catch(() => []);
    if (addresses.length > 0 && addresses.every(isLoopbackAddress)) return url;
  }
  if (url.protocol !== 'https:') throw new InvalidInput('url must use https');
  const addresses = isIP(host) !== 0 ? [host] : await resolveAll(host);
  if (addresses.length === 0 || addresses.some((a) => isRefusedAddress(a, policy))) {
    throw new InvalidInput(
      policy.allowLoopback === true
        ? 'url must point to a public address or to this computer (loopback, allowed on the dev chain); private and link-local targets are refused'
        : 'url must point to a public address; private, loopback and link-local targets are refused',
    );
  }
  return url;
}

async function resolveAll(host: string): Promise<string[]> {
  try {
    return (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    throw new InvalidInput(`url host ${host} does not resolve`);
  }
}
