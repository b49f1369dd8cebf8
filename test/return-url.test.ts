/**
 * returnUrl on receipts and orders (DESIGN.md "Integrator API"): an absolute https URL (http on
 * localhost only on the dev chain) whose origin is one of the shop's allowedEmbedOrigins; stored,
 * echoed by the detail, the list, the status answer, the order's answer and GET /api/pay (there
 * only while its origin is still allowed); part of what makes a retry the same request.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { pino } from 'pino';
import type { Db } from '../src/db/client.ts';
import { receipts } from '../src/db/schema.ts';
import { createStores } from '../src/db/stores.ts';
import { ReceiptService } from '../src/domain/receipt-service.ts';
import { parseReturnUrl, returnUrlPolicy, returnUrlShown } from '../src/domain/return-url.ts';
import { saveShopConfig } from '../src/domain/shop.ts';
import { Journal } from '../src/journal/journal.ts';
import { loadJwtKey } from '../src/auth/secret.ts';
import { appWithDatabaseAway, type TestApp, useTestApp } from './helpers/app.ts';
import { assertRefusedOnReceiptsAndOrders, setUpMerchant } from './helpers/merchant.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const SHOP = 'https://shop.example';
const shop = { processingFeePct: 0, allowedEmbedOrigins: [SHOP, 'https://other.example:8443'] };
const receiptBody = (id: string, returnUrl?: unknown) => ({
  id,
  lineItems: [{ label: 'Coffee', priceUsd: 3.5 }],
  totalUsd: 3.5,
  ...(returnUrl === undefined ? {} : { returnUrl }),
});
const payPath = (paymentUrl: string) => {
  const u = new URL(paymentUrl);
  return `/api/pay/${u.pathname.split('/').pop()}${u.search}`;
};

describe('returnUrl: the rules', () => {
  test('https only; http on localhost only under the dev chain policy; no credentials; normalised', () => {
    const prod = { allowLoopbackHttp: false };
    const dev = { allowLoopbackHttp: true };
    assert.equal(parseReturnUrl('https://Shop.Example/a b?x=1#top', prod), 'https://shop.example/a%20b?x=1#top');
    assert.equal(parseReturnUrl(undefined, prod), null);
    assert.equal(parseReturnUrl('http://localhost:3000/done', dev), 'http://localhost:3000/done');
    assert.equal(parseReturnUrl('http://127.0.0.1:3000/done', dev), 'http://127.0.0.1:3000/done');
    assert.throws(() => parseReturnUrl('http://localhost:3000/done', prod), /returnUrl must use https; http is refused/);
    assert.throws(() => parseReturnUrl('http://shop.example/', dev), /returnUrl must use https \(or http on localhost/);
    assert.throws(() => parseReturnUrl('javascript:alert(1)', dev), /javascript is refused/);
    assert.throws(() => parseReturnUrl('data:text/html,hi', dev), /data is refused/);
    assert.throws(() => parseReturnUrl('/orders/1', dev), /absolute https URL/);
    assert.throws(() => parseReturnUrl('https://user:pw@shop.example/', dev), /user name or password/);
    assert.deepEqual(returnUrlPolicy({ chain: 'dev', nodeEnv: 'development' }), dev);
    assert.deepEqual(returnUrlPolicy({ chain: 'dev', nodeEnv: 'production' }), prod);
    assert.deepEqual(returnUrlPolicy({ chain: 'base', nodeEnv: 'development' }), prod);
    // What the page is given: only an http(s) URL whose origin is still allowed.
    assert.equal(returnUrlShown('https://shop.example/x', [SHOP]), 'https://shop.example/x');
    assert.equal(returnUrlShown('https://shop.example/x', ['https://other.example']), null);
    assert.equal(returnUrlShown('javascript:alert(1)//https://shop.example', [SHOP, 'null']), null);
    assert.equal(returnUrlShown(null, [SHOP]), null);
  });

  for (const [name, returnUrl, says] of [
    ['a relative URL', '/orders/1', /returnUrl must be an absolute https URL/],
    ['a javascript: URL', 'javascript:alert(document.cookie)', /returnUrl must use https .*; javascript is refused/],
    ['plain http', 'http://shop.example/done', /returnUrl must use https .*; http is refused/],
    ['credentials', 'https://u:p@shop.example/', /returnUrl must not carry a user name or password/],
    ['an origin the shop does not allow', 'https://evil.example/phish', /returnUrl's origin https:\/\/evil\.example is not one the shop allows.*now https:\/\/shop\.example, https:\/\/other\.example:8443/],
    ['another port of an allowed host', 'https://shop.example:8443/', /origin https:\/\/shop\.example:8443 is not one the shop allows/],
    ['more than 2048 characters', `${SHOP}/${'a'.repeat(2048)}`, /returnUrl must NOT have more than 2048 characters/],
    ['a number', 42, /returnUrl must be string/],
  ] as const) {
    test(`refuses ${name} with 400 invalid_input naming it, on receipts and orders`, async () => {
      const m = await setUpMerchant(t, { shop, items: [{ sku: 'tea', name: 'Tea', priceUsd: 2 }] });
      await assertRefusedOnReceiptsAndOrders(t, m, receiptBody('bad-url', returnUrl), { items: [{ sku: 'tea', qty: 1 }], returnUrl }, says);
    });
  }

  test('http on localhost is accepted on the dev chain (this test app runs it) when the shop allows its origin', async () => {
    assert.equal(t.config.chain, 'dev');
    const m = await setUpMerchant(t, { shop: { processingFeePct: 0, allowedEmbedOrigins: ['http://localhost:3000'] } });
    const res = await t.call(m.key, 'POST', '/api/receipts', receiptBody('dev-url', 'http://localhost:3000/done'));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal((await t.call(m.key, 'GET', '/api/receipts/dev-url')).body.returnUrl, 'http://localhost:3000/done');
  });

  test('a shop that allows no origin yet is told where to add one', async () => {
    const m = await setUpMerchant(t);
    const res = await t.call(m.key, 'POST', '/api/receipts', receiptBody('none', `${SHOP}/done`));
    assert.equal(res.status, 400);
    assert.match(res.body.message, /add it to allowedEmbedOrigins in the shop settings .*which lists none yet/);
  });
});

describe('returnUrl: echoed', () => {
  test('by the detail, the list, the status answer and GET /api/pay; null when none was sent', async () => {
    const m = await setUpMerchant(t, { shop });
    const url = `${SHOP}/orders/SO-1?from=pay#done`;
    const created = await t.call(m.key, 'POST', '/api/receipts', receiptBody('ru-1', url));
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const plain = await t.call(m.key, 'POST', '/api/receipts', receiptBody('ru-2'));
    assert.equal((await t.call(m.key, 'GET', '/api/receipts/ru-1')).body.returnUrl, url);
    assert.equal((await t.call(m.key, 'GET', '/api/receipts/ru-2')).body.returnUrl, null);
    const list = await t.call(m.key, 'GET', '/api/receipts');
    assert.deepEqual(
      Object.fromEntries(list.body.receipts.map((r: { receiptId: string; returnUrl: unknown }) => [r.receiptId, r.returnUrl])),
      { 'ru-1': url, 'ru-2': null },
    );
    assert.equal((await t.call(m.key, 'GET', '/api/receipts/status?receiptId=ru-1')).body.returnUrl, url);
    assert.equal((await t.call(null, 'GET', payPath(created.body.paymentUrl))).body.returnUrl, url);
    assert.equal((await t.call(null, 'GET', payPath(plain.body.paymentUrl))).body.returnUrl, null);

    // The shop withdraws the origin: the page is no longer given the link; the merchant's answers keep it.
    await saveShopConfig(t.deps.database.db, m.wallet, { processingFeePct: 0, allowedEmbedOrigins: ['https://other.example:8443'] });
    assert.equal((await t.call(null, 'GET', payPath(created.body.paymentUrl))).body.returnUrl, null);
    assert.equal((await t.call(m.key, 'GET', '/api/receipts/ru-1')).body.returnUrl, url);
  });

  test("by the order's answer and the order's receipt", async () => {
    const m = await setUpMerchant(t, { shop, items: [{ sku: 'tea', name: 'Tea', priceUsd: 2 }] });
    const url = 'https://other.example:8443/thanks';
    const res = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'tea', qty: 1 }], returnUrl: url });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.receipt.returnUrl, url);
    assert.equal((await t.call(m.key, 'GET', `/api/receipts/${res.body.receipt.receiptId}`)).body.returnUrl, url);
    assert.equal((await t.call(null, 'GET', payPath(res.body.receipt.paymentUrl))).body.returnUrl, url);
  });

  test('a stored URL the page could not follow safely is never given to it', async () => {
    const m = await setUpMerchant(t, { shop });
    const created = await t.call(m.key, 'POST', '/api/receipts', receiptBody('ru-js', `${SHOP}/ok`));
    // Written past the API's checks, as a bad migration or a hand edit could.
    await t.deps.database.db.update(receipts).set({ returnUrl: 'javascript:alert(1)' }).where(and(eq(receipts.wallet, m.wallet), eq(receipts.id, 'ru-js')));
    assert.equal((await t.call(null, 'GET', payPath(created.body.paymentUrl))).body.returnUrl, null);
  });
});

describe('returnUrl: retries', () => {
  test('the same id and returnUrl answers as the first call; another returnUrl, or none, is 409 conflict', async () => {
    const m = await setUpMerchant(t, { shop });
    const first = await t.call(m.key, 'POST', '/api/receipts', receiptBody('rr-1', `${SHOP}/a`));
    assert.equal(first.status, 201);
    const again = await t.call(m.key, 'POST', '/api/receipts', receiptBody('rr-1', `${SHOP}/a`));
    assert.equal(again.status, 201);
    assert.deepEqual(again.body, first.body);
    for (const other of [`${SHOP}/b`, undefined]) {
      const res = await t.call(m.key, 'POST', '/api/receipts', receiptBody('rr-1', other));
      assert.equal(res.status, 409, String(other));
      assert.equal(res.body.error, 'conflict');
    }
    const key = { 'idempotency-key': `ru-${Math.random()}` };
    assert.equal((await t.call(m.key, 'POST', '/api/receipts', receiptBody('rr-2', `${SHOP}/a`), key)).status, 201);
    assert.equal((await t.call(m.key, 'POST', '/api/receipts', receiptBody('rr-2', `${SHOP}/b`), key)).status, 409);
  });

  test('a retry after the shop withdrew the origin answers as the first call; a new receipt with it is refused', async () => {
    const m = await setUpMerchant(t, { shop });
    const first = await t.call(m.key, 'POST', '/api/receipts', receiptBody('rw-1', `${SHOP}/a`));
    assert.equal(first.status, 201);
    await saveShopConfig(t.deps.database.db, m.wallet, { processingFeePct: 0, allowedEmbedOrigins: ['https://other.example:8443'] });
    const again = await t.call(m.key, 'POST', '/api/receipts', receiptBody('rw-1', `${SHOP}/a`));
    assert.equal(again.status, 201, JSON.stringify(again.body));
    assert.deepEqual(again.body, first.body, 'the first answer, not a refusal of what was already stored');
    const other = await t.call(m.key, 'POST', '/api/receipts', receiptBody('rw-1', `${SHOP}/b`));
    assert.equal(other.status, 400, 'another URL of the withdrawn origin is refused');
    const fresh = await t.call(m.key, 'POST', '/api/receipts', receiptBody('rw-2', `${SHOP}/a`));
    assert.equal(fresh.status, 400);
    assert.equal(fresh.body.error, 'invalid_input');
  });
});

describe('returnUrl while the database is away', () => {
  /**
   * The app of `t` whose receipts service reads and stores through an unreachable database (its
   * shop settings read through `reads`, which a test switches between the two), journaling into
   * its own journal; the journal replays into t's database when the test calls `back()`.
   */
  async function outage() {
    const dir = mkdtempSync(path.join(tmpdir(), 'splitline-return-url-'));
    const journal = await Journal.open(dir, {
      database: t.deps.database,
      receipts: t.deps.stores.receipts,
      logger: pino({ level: 'silent' }),
      siteUrl: t.config.siteUrl,
    });
    const reads = { away: false };
    let unreachableDb!: Db;
    const { app, close } = await appWithDatabaseAway(t, (unreachable) => {
      unreachableDb = unreachable;
      const options = {
        get db() {
          return reads.away ? unreachable : t.deps.database.db;
        },
        store: createStores(unreachable).receipts,
        journal,
        siteUrl: t.config.siteUrl,
        brandName: t.config.brandName,
        receiptTtlMinutes: t.config.receiptTtlMinutes,
        payTokenSecret: loadJwtKey(t.config),
        returnUrlPolicy: returnUrlPolicy(t.config),
      };
      return { receipts: new ReceiptService(options) };
    });
    assert.ok(unreachableDb);
    const post = async (key: string, body: unknown) => {
      const res = await app.inject({ method: 'POST', url: '/api/receipts', headers: { 'ocp-apim-subscription-key': key }, payload: body as object });
      return { status: res.statusCode, body: res.json() };
    };
    const get = async (key: string, url: string) => {
      const res = await app.inject({ method: 'GET', url, headers: { 'ocp-apim-subscription-key': key } });
      return { status: res.statusCode, body: res.json() };
    };
    return {
      reads,
      post,
      get,
      /** The database is back: the journal replays into it. */
      async back() {
        const result = await journal.replayNow();
        assert.equal(result.remaining, 0, JSON.stringify(result));
      },
      async close() {
        await close();
        await journal.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }

  test('a shop this app has not read: accepted and journaled, stored with its returnUrl when the database is back', async () => {
    const m = await setUpMerchant(t, { shop });
    const o = await outage();
    try {
      o.reads.away = true;
      const url = `${SHOP}/orders/SO-7`;
      const res = await o.post(m.key, receiptBody('away-1', url));
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.degraded, true);
      // Answered from the journal meanwhile, its returnUrl and units (the app's token) included.
      const held = await o.get(m.key, '/api/receipts/away-1');
      assert.equal(held.status, 200, JSON.stringify(held.body));
      assert.equal(held.body.degraded, true);
      assert.equal(held.body.returnUrl, url);
      assert.equal(held.body.totalBaseUnits, '3500000');
      assert.equal(held.body.decimals, 6);
      assert.equal(held.body.token, null, 'this app runs without a chain');
      // An origin the shop does not allow cannot be told apart yet: acknowledged too, never linked.
      const stranger = await o.post(m.key, receiptBody('away-2', 'https://evil.example/phish'));
      assert.equal(stranger.status, 201, JSON.stringify(stranger.body));
      // Rules that need no database still apply.
      const plain = await o.post(m.key, receiptBody('away-3', 'http://shop.example/done'));
      assert.equal(plain.status, 400);
      assert.match(plain.body.message, /returnUrl must use https/);

      await o.back();
      const stored = await t.call(m.key, 'GET', '/api/receipts/away-1');
      assert.equal(stored.status, 200);
      assert.equal(stored.body.returnUrl, url);
      assert.equal(stored.body.status, 'pending');
      assert.equal((await t.call(null, 'GET', payPath(res.body.paymentUrl))).body.returnUrl, url);
      const evil = await t.call(m.key, 'GET', '/api/receipts/away-2');
      assert.equal(evil.body.returnUrl, 'https://evil.example/phish', 'the acknowledged write is kept as sent');
      assert.equal((await t.call(null, 'GET', payPath(stranger.body.paymentUrl))).body.returnUrl, null, 'but the page never links to it');
      assert.equal((await t.call(m.key, 'GET', '/api/receipts/away-3')).status, 404);
    } finally {
      await o.close();
    }
  });

  test("a shop read before the outage: its origins stand in, so another origin is still refused", async () => {
    const m = await setUpMerchant(t, { shop });
    const o = await outage();
    try {
      // Read while the database answers (the store is away, so this create is journaled too).
      const first = await o.post(m.key, receiptBody('known-1', `${SHOP}/a`));
      assert.equal(first.status, 201, JSON.stringify(first.body));
      o.reads.away = true;
      const ok = await o.post(m.key, receiptBody('known-2', 'https://other.example:8443/b'));
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.equal(ok.body.degraded, true);
      const refused = await o.post(m.key, receiptBody('known-3', 'https://evil.example/phish'));
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error, 'invalid_input');
      assert.match(refused.body.message, /origin https:\/\/evil\.example is not one the shop allows/);

      await o.back();
      assert.equal((await t.call(m.key, 'GET', '/api/receipts/known-1')).body.returnUrl, `${SHOP}/a`);
      assert.equal((await t.call(m.key, 'GET', '/api/receipts/known-2')).body.returnUrl, 'https://other.example:8443/b');
      assert.equal((await t.call(m.key, 'GET', '/api/receipts/known-3')).status, 404);
    } finally {
      await o.close();
    }
  });
});
