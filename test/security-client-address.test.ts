/**
 * The client address that per-address limits count against: by default the connection's, so a
 * client rotating X-Forwarded-For cannot escape them (it could when EDGE_SECRET made every hop
 * believed); with TRUST_PROXY, the hop the trusted proxies name. And invalid subscription keys,
 * limited per client address without ever refusing a valid key.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';
import { until } from './helpers/wait.ts';

const LIMIT = 5;

/** Sends the credential-free tracking route with the given headers from `remoteAddress`. */
async function track(t: TestApp, headers: Record<string, string>, remoteAddress = '127.0.0.1') {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/receipts/status',
    remoteAddress,
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify({ receiptId: 'r-1', wallet: '0x' + '11'.repeat(20), status: 'link_opened' }),
  } satisfies InjectOptions);
  return res.statusCode;
}

/** A window far from its end, so LIMIT + n requests all fall in it. */
async function freshWindow(): Promise<void> {
  await until(() => Date.now() % 60_000 <= 50_000, 11_000, 'a one-minute rate window far from its end');
}

const spoof = () => `${1 + (randomBytes(1)[0]! % 223)}.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;

describe('TRUST_PROXY', () => {
  test('by default, even with EDGE_SECRET set, a rotating X-Forwarded-For does not escape the per-address limit', async () => {
    const t = await startTestApp({ EDGE_SECRET: 'edge-secret-for-tests', PUBLIC_RATE_LIMIT_PER_MINUTE: String(LIMIT) });
    try {
      await freshWindow();
      const answers = [];
      for (let i = 0; i < 3 * LIMIT; i++) {
        answers.push(await track(t, { 'x-edge-secret': 'edge-secret-for-tests', 'x-forwarded-for': `${spoof()}, ${spoof()}` }));
      }
      assert.equal(answers.filter((s) => s === 200).length, LIMIT, answers.join(','));
      assert.equal(answers.filter((s) => s === 429).length, 2 * LIMIT);
    } finally {
      await t.close();
    }
  });

  test('TRUST_PROXY=1: the address the proxy appended counts, whatever the client wrote before it', async () => {
    const t = await startTestApp({ TRUST_PROXY: '1', PUBLIC_RATE_LIMIT_PER_MINUTE: String(LIMIT) });
    try {
      await freshWindow();
      const fromClient = [];
      for (let i = 0; i < 2 * LIMIT; i++) fromClient.push(await track(t, { 'x-forwarded-for': `${spoof()}, 203.0.113.7` }));
      assert.equal(fromClient.filter((s) => s === 200).length, LIMIT, fromClient.join(','));
      // Another client behind the same proxy has its own budget.
      assert.equal(await track(t, { 'x-forwarded-for': `${spoof()}, 203.0.113.8` }), 200);
      // Without the header, the proxy's own address counts (a request not through it).
      assert.equal(await track(t, {}), 200);
    } finally {
      await t.close();
    }
  });

  test('TRUST_PROXY with addresses: hops are believed only from the listed proxies', async () => {
    const t = await startTestApp({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1', PUBLIC_RATE_LIMIT_PER_MINUTE: String(LIMIT) });
    try {
      await freshWindow();
      // Through the trusted proxy (127.0.0.1) and a trusted inner hop (10.1.2.3): the client is 198.51.100.4.
      const through = [];
      for (let i = 0; i < 2 * LIMIT; i++) through.push(await track(t, { 'x-forwarded-for': `${spoof()}, 198.51.100.4, 10.1.2.3` }));
      assert.equal(through.filter((s) => s === 200).length, LIMIT, through.join(','));
      // From an address that is not a listed proxy, X-Forwarded-For is ignored: its own address counts.
      const direct = [];
      for (let i = 0; i < 2 * LIMIT; i++) direct.push(await track(t, { 'x-forwarded-for': `${spoof()}` }, '192.0.2.50'));
      assert.equal(direct.filter((s) => s === 200).length, LIMIT, direct.join(','));
    } finally {
      await t.close();
    }
  });
});

describe('invalid subscription keys', () => {
  const bogus = () => 'spl_' + randomBytes(32).toString('base64url');
  const get = (t: TestApp, key: string, remoteAddress = '127.0.0.1') =>
    t.app.inject({ method: 'GET', url: '/api/receipts', remoteAddress, headers: { 'ocp-apim-subscription-key': key } } satisfies InjectOptions);

  test('are limited per client address: 429 rate_limited with resetAt, and never refuse a valid key', async () => {
    const t = await startTestApp({ INVALID_KEY_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      await freshWindow();
      for (let i = 0; i < 3; i++) assert.equal((await get(t, bogus())).statusCode, 401);
      const refused = await get(t, bogus());
      assert.equal(refused.statusCode, 429);
      const body = refused.json();
      assert.equal(body.error, 'rate_limited');
      assert.match(body.message, /invalid subscription keys/);
      assert.ok(body.resetAt > Date.now() && body.resetAt <= Date.now() + 60_000);
      // A valid key the address never presented before is served: failures are their own bucket.
      const uncached = await t.key(randomWallet());
      assert.equal((await get(t, uncached)).statusCode, 200);
      // Other addresses are unaffected.
      assert.equal((await get(t, bogus(), '198.51.100.9')).statusCode, 401);
    } finally {
      await t.close();
    }
  });

  test('INVALID_KEY_RATE_LIMIT_PER_MINUTE defaults to 30', async () => {
    const { loadConfig } = await import('../src/config.ts');
    assert.equal(loadConfig({}).invalidKeyRateLimitPerMinute, 30);
  });
});
