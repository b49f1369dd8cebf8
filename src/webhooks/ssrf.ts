/**
 * Webhook targets must be public: a merchant must not be able to make Splitline call its own
 * network (metadata services, databases, admin ports). Checked at registration and again for
 * every connection at delivery time, so a DNS answer that changes later is caught too.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { InvalidInput } from '../domain/errors.ts';

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

export function isPrivateAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 0) return true;
  if (family === 6) {
    // IPv4-mapped addresses are judged by the IPv4 address they carry.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    if (mapped) return blocked.check(mapped[1]!, 'ipv4');
    return blocked.check(ip, 'ipv6');
  }
  return blocked.check(ip, 'ipv4');
}

export interface UrlPolicy {
  allowPrivate: boolean;
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
  if (url.protocol !== 'https:' && !(policy.allowPrivate && url.protocol === 'http:')) {
    throw new InvalidInput('url must use https');
  }
  if (url.username !== '' || url.password !== '') throw new InvalidInput('url must not carry credentials');
  if (policy.allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) !== 0 ? [host] : await resolveAll(host);
  if (addresses.length === 0 || addresses.some(isPrivateAddress)) {
    throw new InvalidInput('url must point to a public address; private, loopback and link-local targets are refused');
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
