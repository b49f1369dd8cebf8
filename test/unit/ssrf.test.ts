import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertPublicUrl, isPrivateAddress, REFUSED_IPV4, REFUSED_IPV6 } from '../../src/webhooks/ssrf.ts';

test('public addresses pass', () => {
  for (const ip of ['93.184.215.14', '8.8.8.8', '1.1.1.1', '2606:4700::1111', '::ffff:8.8.8.8']) {
    assert.equal(isPrivateAddress(ip), false, ip);
  }
});

test('private, loopback, link-local, CGNAT, multicast and reserved addresses are refused', () => {
  for (const ip of [
    '127.0.0.1', '127.255.0.1', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12::1',
    '::ffff:127.0.0.1', '::ffff:10.0.0.1', 'not-an-ip',
  ]) {
    assert.equal(isPrivateAddress(ip), true, ip);
  }
  assert.equal(isPrivateAddress('172.32.0.1'), false, 'just outside 172.16/12');
});

test('allowPrivate admits http and private targets (tests only)', async () => {
  const url = await assertPublicUrl('http://127.0.0.1:9/x', { allowPrivate: true });
  assert.equal(url.hostname, '127.0.0.1');
  await assert.rejects(assertPublicUrl('http://127.0.0.1:9/x', { allowPrivate: false }));
});

/**
 * One address from inside every entry of IANA's IPv4 and IPv6 Special-Purpose Address Registries
 * (https://www.iana.org/assignments/iana-ipv4-special-registry, .../iana-ipv6-special-registry),
 * plus multicast and the deprecated ranges, each with an address just outside where that matters.
 */
const IANA_IPV4: [string, string][] = [
  ['0.0.0.0/8', '0.1.2.3'],
  ['0.0.0.0/32', '0.0.0.0'],
  ['10.0.0.0/8', '10.255.255.254'],
  ['100.64.0.0/10', '100.127.255.254'],
  ['127.0.0.0/8', '127.1.2.3'],
  ['169.254.0.0/16', '169.254.169.254'],
  ['172.16.0.0/12', '172.20.0.1'],
  ['192.0.0.0/24', '192.0.0.1'],
  ['192.0.0.0/29 DS-Lite', '192.0.0.2'],
  ['192.0.0.8/32 IPv4 dummy', '192.0.0.8'],
  ['192.0.0.9/32 PCP anycast', '192.0.0.9'],
  ['192.0.0.10/32 TURN anycast', '192.0.0.10'],
  ['192.0.0.170/32 NAT64/DNS64 discovery', '192.0.0.170'],
  ['192.0.0.171/32 NAT64/DNS64 discovery', '192.0.0.171'],
  ['192.0.2.0/24 TEST-NET-1', '192.0.2.10'],
  ['192.31.196.0/24 AS112-v4', '192.31.196.1'],
  ['192.52.193.0/24 AMT', '192.52.193.1'],
  ['192.88.99.0/24 6to4 relay anycast', '192.88.99.1'],
  ['192.168.0.0/16', '192.168.100.1'],
  ['192.175.48.0/24 AS112', '192.175.48.6'],
  ['198.18.0.0/15 benchmarking', '198.19.255.1'],
  ['198.51.100.0/24 TEST-NET-2', '198.51.100.7'],
  ['203.0.113.0/24 TEST-NET-3', '203.0.113.9'],
  ['224.0.0.0/4 multicast', '239.255.255.250'],
  ['240.0.0.0/4 reserved', '250.1.2.3'],
  ['255.255.255.255/32 limited broadcast', '255.255.255.255'],
];

const IANA_IPV6: [string, string][] = [
  ['::1/128 loopback', '::1'],
  ['::/128 unspecified', '::'],
  ['::/96 IPv4-compatible (deprecated), loopback inside', '::127.0.0.1'],
  ['::/96 IPv4-compatible (deprecated), public inside', '::8.8.8.8'],
  ['::ffff:0:0/96 IPv4-mapped, private inside', '::ffff:10.0.0.1'],
  ['::ffff:0:0/96 IPv4-mapped, hex notation', '::ffff:a9fe:a9fe'],
  ['::ffff:0:0/96 IPv4-mapped, long notation', '0:0:0:0:0:ffff:127.0.0.1'],
  ['::ffff:0:0:0/96 IPv4-translated', '::ffff:0:808:808'],
  ['64:ff9b::/96 NAT64, public IPv4 inside', '64:ff9b::8.8.8.8'],
  ['64:ff9b::/96 NAT64, loopback inside', '64:ff9b::7f00:1'],
  ['64:ff9b:1::/48 local-use translation', '64:ff9b:1:ffff::a00:1'],
  ['100::/64 discard-only', '100::1'],
  ['100:0:0:1::/64 dummy prefix', '100:0:0:1::1'],
  ['2001::/23 IETF protocol assignments', '2001:1ff::1'],
  ['2001::/32 Teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
  ['2001:1::1/128 PCP anycast', '2001:1::1'],
  ['2001:1::2/128 TURN anycast', '2001:1::2'],
  ['2001:1::3/128 DNS-SD SRP anycast', '2001:1::3'],
  ['2001:2::/48 benchmarking', '2001:2::1'],
  ['2001:3::/32 AMT', '2001:3::1'],
  ['2001:4:112::/48 AS112-v6', '2001:4:112::1'],
  ['2001:10::/28 ORCHID (deprecated)', '2001:10::1'],
  ['2001:20::/28 ORCHIDv2', '2001:2f::1'],
  ['2001:30::/28 drone remote ID', '2001:30::1'],
  ['2001:db8::/32 documentation', '2001:db8:85a3::8a2e:370:7334'],
  ['2002::/16 6to4, loopback inside', '2002:7f00:1::1'],
  ['2002::/16 6to4, metadata service inside', '2002:a9fe:a9fe::1'],
  ['2002::/16 6to4, public inside', '2002:808:808::1'],
  ['2620:4f:8000::/48 AS112', '2620:4f:8000::42'],
  ['3fff::/20 documentation', '3fff:fff::1'],
  ['5f00::/16 segment routing', '5f00:1::1'],
  ['fc00::/7 unique local', 'fdff::1'],
  ['fe80::/10 link-local', 'febf::1'],
  ['fe80::/10 link-local with a zone', 'fe80::1%eth0'],
  ['fec0::/10 site-local (deprecated)', 'fec0::1'],
  ['ff00::/8 multicast', 'ff02::1'],
];

test('an address inside every special-purpose range of the IANA registries is refused', () => {
  for (const [range, ip] of [...IANA_IPV4, ...IANA_IPV6]) assert.equal(isPrivateAddress(ip), true, `${range}: ${ip}`);
});

test('ordinary unicast addresses just outside the special ranges pass', () => {
  for (const ip of [
    '100.128.0.1', '172.32.0.1', '192.0.1.1', '192.0.3.1', '192.88.98.1', '198.17.255.255', '198.20.0.1', '223.255.255.254',
    '::ffff:1.1.1.1', '2001:200::1', '2001:4860:4860::8888', '2003::1', '2620:4f:8001::1', '3fff:1000::1', '2a03:2880::1',
  ]) {
    assert.equal(isPrivateAddress(ip), false, ip);
  }
});

test('the refused lists name a reason for every range', () => {
  for (const [net, prefix, why] of [...REFUSED_IPV4, ...REFUSED_IPV6]) {
    assert.ok(why.length > 5, `${net}/${prefix}`);
  }
});

test('URLs carrying a special address in any notation are refused at registration', async () => {
  for (const url of [
    'https://[64:ff9b::127.0.0.1]/hook', 'https://[2002:7f00:1::]/hook', 'https://[2001::1]/hook',
    'https://[::ffff:169.254.169.254]/hook', 'https://[::127.0.0.1]/hook', 'https://[2001:10::1]/hook',
    'https://[fec0::1]/hook', 'https://198.18.0.1/hook', 'https://0x7f000001/hook', 'https://2130706433/hook',
  ]) {
    await assert.rejects(assertPublicUrl(url, { allowPrivate: false }), /public address/, url);
  }
});
