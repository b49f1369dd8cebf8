/**
 * GET /api/pay/{id}: the brand the payment view shows is the shop's name when the merchant set
 * one, else the deployment's brand (BRAND_NAME), as on the merchant's receipts (src/domain/shop.ts
 * brandOf).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { admin, signIn } from './helpers/session.ts';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => {
  await t?.close();
});

/** A receipt of the wallet's, and the path and query of its payment URL's API. */
async function payView(key: string, id: string) {
  const created = await t.call(key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const url = new URL(created.body.paymentUrl);
  const res = await t.call(null, 'GET', `/api/pay/${url.pathname.split('/pay/')[1]}${url.search}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

test("the payment view shows the deployment's brand for a shop without a name, the shop's name once set, and each merchant's own", async () => {
  const s = await signIn(t);
  const key = await t.key(s.wallet);
  assert.equal((await payView(key, 'brand-1')).brandName, t.config.brandName);

  const named = await admin(t, s, 'POST', '/api/shop/config', { processingFeePct: 0, name: 'Corner Tea' });
  assert.equal(named.status, 200, JSON.stringify(named.body));
  assert.equal((await payView(key, 'brand-2')).brandName, 'Corner Tea');
  // The name is read when the view is, not copied into the receipt: the first receipt shows it too.
  assert.equal((await payView(key, 'brand-1')).brandName, 'Corner Tea');

  // Another merchant, with no name, still shows the deployment's brand.
  const other = await signIn(t);
  assert.equal((await payView(await t.key(other.wallet), 'brand-1')).brandName, t.config.brandName);
});
