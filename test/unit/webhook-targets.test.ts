/**
 * Which webhook targets a configuration accepts (src/webhooks/ssrf.ts webhookTargetPolicy):
 * loopback on the dev chain only, never with NODE_ENV=production or on a real chain; private
 * ranges only with WEBHOOK_ALLOW_PRIVATE. Checked at registration and again at delivery.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { postWebhook } from '../../src/webhooks/send.ts';
import { assertPublicUrl, isLoopbackAddress, isRefusedAddress, webhookTargetPolicy } from '../../src/webhooks/ssrf.ts';

const dev = webhookTargetPolicy(loadConfig({ CHAIN: 'dev' }));
const base = webhookTargetPolicy(loadConfig({ CHAIN: 'base', RPC_URL: 'https://rpc.example' }));
const sepolia = webhookTargetPolicy(loadConfig({ CHAIN: 'base-sepolia', RPC_URL: 'https://rpc.example' }));
const production = webhookTargetPolicy(
  loadConfig({ NODE_ENV: 'production', CHAIN: 'base', RPC_URL: 'https://rpc.example', JWT_SECRET: 'webhook-targets-test-' + 'Q7p2Zk9rT4vX1mN8bC3dF6hJ0' }),
);

describe('the policy a configuration gives', () => {
  test('the dev chain (the default) allows loopback, nothing else private', () => {
    assert.deepEqual(dev, { allowPrivate: false, allowLoopback: true });
    assert.deepEqual(webhookTargetPolicy(loadConfig({})), dev);
  });

  test('a real chain and production refuse loopback', () => {
    for (const p of [base, sepolia, production]) assert.deepEqual(p, { allowPrivate: false, allowLoopback: false });
    // Production with CHAIN=dev is refused at start-up; the policy refuses loopback even so.
    assert.equal(webhookTargetPolicy({ chain: 'dev', nodeEnv: 'production', webhookAllowPrivate: false }).allowLoopback, false);
  });

  test('WEBHOOK_ALLOW_PRIVATE allows everything (tests only)', () => {
    assert.equal(webhookTargetPolicy(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' })).allowPrivate, true);
  });
});

describe('loopback addresses', () => {
  test('127.0.0.0/8, ::1 and IPv4-mapped loopback are loopback; other private ranges are not', () => {
    for (const ip of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1']) assert.equal(isLoopbackAddress(ip), true, ip);
    for (const ip of ['10.0.0.1', '192.168.1.1', '169.254.169.254', '::', 'fe80::1', '::2', '0.0.0.0', '93.184.215.14', 'localhost']) {
      assert.equal(isLoopbackAddress(ip), false, ip);
    }
  });

  test('allowed loopback leaves every other private range refused', () => {
    for (const ip of ['10.0.0.1', '172.16.0.1', '192.168.0.1', '169.254.169.254', '100.64.0.1', 'fe80::1', 'fc00::1', '0.0.0.0']) {
      assert.equal(isRefusedAddress(ip, dev), true, ip);
    }
    assert.equal(isRefusedAddress('127.0.0.1', dev), false);
    assert.equal(isRefusedAddress('127.0.0.1', base), true);
  });
});

describe('registration', () => {
  test('on the dev chain: http://localhost and http://127.0.0.1 are accepted', async () => {
    for (const url of ['http://localhost:3000/hooks', 'http://127.0.0.1:3000/hooks', 'https://127.0.0.1/hooks', 'http://[::1]:3000/hooks']) {
      assert.equal((await assertPublicUrl(url, dev)).toString(), new URL(url).toString());
    }
  });

  test('on the dev chain: private ranges and plain http to a public host are still refused', async () => {
    await assert.rejects(assertPublicUrl('https://10.1.2.3/x', dev), /public address or to this computer/);
    await assert.rejects(assertPublicUrl('http://192.168.1.2/x', dev), /https/);
    await assert.rejects(assertPublicUrl('http://93.184.215.14/x', dev), /https/);
  });

  test('elsewhere loopback is refused, by name or address', async () => {
    for (const p of [base, production]) {
      await assert.rejects(assertPublicUrl('https://127.0.0.1/x', p), /public address/);
      await assert.rejects(assertPublicUrl('https://localhost/x', p), /public address/);
      await assert.rejects(assertPublicUrl('http://localhost:3000/x', p), /https/);
    }
  });
});

describe('delivery', () => {
  test('a loopback receiver is reached on the dev chain and refused otherwise', async () => {
    let calls = 0;
    const server = createServer((req, res) => {
      calls++;
      req.resume();
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      for (const host of ['127.0.0.1', 'localhost']) {
        const ok = await postWebhook(`http://${host}:${port}/h`, {}, '{}', { ...dev, timeoutMs: 2_000 });
        assert.equal(ok.statusCode, 200, `${host}: ${ok.error}`);
        const refused = await postWebhook(`http://${host}:${port}/h`, {}, '{}', { ...base, timeoutMs: 2_000 });
        assert.equal(refused.ok, false);
        assert.match(refused.error ?? '', /^PRIVATE_ADDRESS: /);
      }
      assert.equal(calls, 2);
    } finally {
      server.close();
    }
  });
});
