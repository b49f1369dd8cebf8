/**
 * Budgets an attacker's junk spends, as the attacker ran it (issue 25): an address's invalid keys,
 * junk payment URLs and failed sign-ins refuse that address's junk, never a valid key, a real
 * buyer's payment page or a merchant's sign-in from the same address (behind a proxy without
 * TRUST_PROXY every client has that address). And an IPv6 client counted by its /64, an
 * IPv4-mapped address as IPv4.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { budgetAddress } from '../src/gateway/client-address.ts';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';
import { setUpMerchant } from './helpers/merchant.ts';
import { newAccount, sign } from './helpers/session.ts';
import { until } from './helpers/wait.ts';

/** A window far from its end, so a burst falls in one window. */
async function freshWindow(): Promise<void> {
  await until(() => Date.now() % 60_000 <= 45_000, 16_000, 'a one-minute rate window far from its end');
}

const bogusKey = () => 'spl_' + randomBytes(32).toString('base64url');

function inject(t: TestApp, opts: InjectOptions & { remoteAddress?: string }) {
  return t.app.inject(opts);
}

const getReceipts = (t: TestApp, key: string, remoteAddress = '127.0.0.1') =>
  inject(t, { method: 'GET', url: '/api/receipts', remoteAddress, headers: { 'ocp-apim-subscription-key': key } });

/** A receipt's payment path and query, as its payment URL gives them. */
async function paymentPath(t: TestApp, key: string): Promise<string> {
  const res = await t.call(key, 'POST', '/api/receipts', { id: `r-${randomBytes(4).toString('hex')}`, lineItems: [{ label: 'Tea', priceUsd: 4.5 }], totalUsd: 4.5 });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const url = new URL(res.body.paymentUrl);
  return `/api${url.pathname}${url.search}`;
}

async function signInFrom(t: TestApp, remoteAddress: string): Promise<number> {
  const account = newAccount();
  const post = (url: string, payload: unknown) =>
    inject(t, { method: 'POST', url, remoteAddress, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
  const ch = await post('/api/auth/challenge', { wallet: account.address });
  if (ch.statusCode !== 200) return ch.statusCode;
  const { nonce, typedData } = ch.json();
  const res = await post('/api/auth/login', { wallet: account.address, nonce, signature: await sign(account, typedData) });
  return res.statusCode;
}

describe('invalid keys spend only their own budget', () => {
  test('30 unknown keys from one address: the attacker gets 429, a valid key from that address is served', async () => {
    const t = await startTestApp({ INVALID_KEY_RATE_LIMIT_PER_MINUTE: '30' });
    try {
      await freshWindow();
      for (let i = 0; i < 30; i++) assert.equal((await getReceipts(t, bogusKey())).statusCode, 401);
      const refused = await getReceipts(t, bogusKey());
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.json().error, 'rate_limited');
      assert.match(refused.json().message, /invalid subscription keys/);
      // Keys never seen before (no cache can help them), from the same address.
      for (let i = 0; i < 5; i++) {
        const valid = await t.key(randomWallet());
        assert.equal((await getReceipts(t, valid)).statusCode, 200, 'a valid key is never refused for others\' failures');
      }
      // The attacker keeps going, and stays refused; malformed keys have a bucket of their own.
      assert.equal((await getReceipts(t, bogusKey())).statusCode, 429);
      assert.equal((await getReceipts(t, 'not-a-key')).statusCode, 401);
      // A revoked key is an unknown key: refused like the junk, never served.
      assert.equal((await getReceipts(t, bogusKey(), '198.51.100.9')).statusCode, 401, 'another address has its own failure budget');
    } finally {
      await t.close();
    }
  });
});

describe('public routes: junk costs only its own bucket', () => {
  test('113 junk GET /api/pay/… from one address leave a real buyer\'s payment page and a merchant\'s sign-in open', async () => {
    const t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '100' });
    try {
      const m = await setUpMerchant(t);
      const real = await paymentPath(t, m.key);
      await freshWindow();
      const junk = [];
      for (let i = 0; i < 113; i++) {
        junk.push((await inject(t, { method: 'GET', url: `/api/pay/r-${i}?t=${randomBytes(16).toString('base64url')}` })).statusCode);
      }
      assert.equal(junk.filter((s) => s === 404).length, 100, junk.join(','));
      assert.equal(junk.filter((s) => s === 429).length, 13);
      // The same address: the buyer's page, its tracking, and a merchant signing in.
      const page = await inject(t, { method: 'GET', url: real });
      assert.equal(page.statusCode, 200, page.body);
      const [path, query] = real.split('?');
      const tracked = await inject(t, {
        method: 'POST',
        url: `${path}/status?${query}`,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ status: 'link_opened' }),
      });
      assert.equal(tracked.statusCode, 200, tracked.body);
      assert.equal(await signInFrom(t, '127.0.0.1'), 200);
    } finally {
      await t.close();
    }
  });

  test('a real payment page has its own budget per address: its buyer is limited on it alone', async () => {
    const t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '5' });
    try {
      const m = await setUpMerchant(t);
      const a = await paymentPath(t, m.key);
      const b = await paymentPath(t, m.key);
      await freshWindow();
      const onA = [];
      for (let i = 0; i < 7; i++) onA.push((await inject(t, { method: 'GET', url: a })).statusCode);
      assert.deepEqual(onA, [200, 200, 200, 200, 200, 429, 429]);
      assert.equal((await inject(t, { method: 'GET', url: b })).statusCode, 200);
    } finally {
      await t.close();
    }
  });

  test('failed sign-ins refuse the failing address its failures, never a sign-in that verifies', async () => {
    const t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '10' });
    try {
      await freshWindow();
      const attacker = newAccount();
      const answers = [];
      for (let i = 0; i < 12; i++) {
        const ch = await inject(t, { method: 'POST', url: '/api/auth/challenge', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ wallet: randomWallet() }) });
        assert.equal(ch.statusCode, 200);
        const res = await inject(t, {
          method: 'POST',
          url: '/api/auth/login',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ wallet: attacker.address, nonce: ch.json().nonce, signature: '0x' + '11'.repeat(65) }),
        });
        answers.push(res.statusCode);
      }
      assert.deepEqual(answers, [...Array(10).fill(401), 429, 429]);
      assert.equal(await signInFrom(t, '127.0.0.1'), 200);
    } finally {
      await t.close();
    }
  });
});

describe('budget addresses', () => {
  test('IPv6 by its /64, IPv4-mapped as IPv4', () => {
    assert.equal(budgetAddress('2001:db8:1:2:3:4:5:6'), budgetAddress('2001:db8:1:2:ffff::1'));
    assert.notEqual(budgetAddress('2001:db8:1:2::1'), budgetAddress('2001:db8:1:3::1'));
    assert.equal(budgetAddress('2001:0DB8:0001:0002:0000:0000:0000:0001'), budgetAddress('2001:db8:1:2::1'));
    assert.equal(budgetAddress('::ffff:192.0.2.7'), '192.0.2.7');
    assert.equal(budgetAddress('::ffff:c000:207'), '192.0.2.7');
    assert.equal(budgetAddress('192.0.2.7'), '192.0.2.7');
  });

  const LIMIT = 5;
  const fromProxy = (t: TestApp, client: string, url = '/api/auth/challenge', wallet = randomWallet()) =>
    inject(t, {
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
      payload: JSON.stringify({ wallet }),
    });

  test('through TRUST_PROXY, sign-in challenges from one /64 share one budget; another /64 has its own', async () => {
    const t = await startTestApp({ TRUST_PROXY: '1', PUBLIC_RATE_LIMIT_PER_MINUTE: String(LIMIT) });
    try {
      await freshWindow();
      const wallet = randomWallet();
      const answers = [];
      for (let i = 0; i < 3 * LIMIT; i++) {
        answers.push((await fromProxy(t, `2001:db8:aa:bb:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}::${i + 1}`, undefined, wallet)).statusCode);
      }
      assert.equal(answers.filter((s) => s === 200).length, LIMIT, answers.join(','));
      assert.equal((await fromProxy(t, '2001:db8:aa:bc::1', undefined, wallet)).statusCode, 200);
    } finally {
      await t.close();
    }
  });

  test('through TRUST_PROXY, 100 invalid keys from one /64 are limited like one address', async () => {
    const t = await startTestApp({ TRUST_PROXY: '1', INVALID_KEY_RATE_LIMIT_PER_MINUTE: String(LIMIT) });
    try {
      await freshWindow();
      const answers = [];
      for (let i = 0; i < 100; i++) {
        const res = await inject(t, {
          method: 'GET',
          url: '/api/receipts',
          headers: { 'ocp-apim-subscription-key': bogusKey(), 'x-forwarded-for': `2001:db8:cc:dd::${(i + 1).toString(16)}` },
        });
        answers.push(res.statusCode);
      }
      assert.equal(answers.filter((s) => s === 401).length, LIMIT);
      assert.equal(answers.filter((s) => s === 429).length, 100 - LIMIT);
      // An IPv4 client through a dual-stack proxy (::ffff:…) and the same client in IPv4 share one budget.
      const mapped = [];
      for (let i = 0; i < LIMIT; i++) {
        mapped.push((await inject(t, { method: 'GET', url: '/api/receipts', headers: { 'ocp-apim-subscription-key': bogusKey(), 'x-forwarded-for': '::ffff:198.51.100.20' } })).statusCode);
      }
      const plain = await inject(t, { method: 'GET', url: '/api/receipts', headers: { 'ocp-apim-subscription-key': bogusKey(), 'x-forwarded-for': '198.51.100.20' } });
      assert.deepEqual(mapped, Array(LIMIT).fill(401));
      assert.equal(plain.statusCode, 429);
    } finally {
      await t.close();
    }
  });
});
