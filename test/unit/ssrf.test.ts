import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertPublicUrl, isPrivateAddress } from '../../src/webhooks/ssrf.ts';

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
