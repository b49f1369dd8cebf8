/**
 * Payment URLs do not depend on the instance or the attempt: an API receipt's token is derived from
 * JWT_SECRET (shared by every instance), the merchant and the id.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { payTokenFor } from '../src/domain/receipts.ts';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';

const SECRET = 's'.repeat(40);
let a: TestApp;
let b: TestApp;
before(async () => {
  a = await startTestApp({ JWT_SECRET: SECRET });
  b = await startTestApp({ JWT_SECRET: SECRET });
});
after(async () => {
  await a?.close();
  await b?.close();
});

test('two instances with the same secret answer the same payment URL for the same merchant and receipt id', async () => {
  const wallet = randomWallet();
  const body = { id: 'same-1', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 };
  const ra = await a.call(await a.key(wallet), 'POST', '/api/receipts', body);
  const rb = await b.call(await b.key(wallet), 'POST', '/api/receipts', body);
  assert.equal(ra.status, 201);
  assert.equal(rb.status, 201);
  assert.equal(ra.body.paymentUrl.split('/pay/')[1], rb.body.paymentUrl.split('/pay/')[1]);
  const token = new URL(ra.body.paymentUrl).searchParams.get('t');
  assert.equal(token, payTokenFor(new TextEncoder().encode(SECRET), wallet, 'same-1'));
  // The URL opens the receipt on either instance's database when it holds it.
  assert.equal((await a.call(null, 'GET', `/api/pay/same-1?t=${token}`)).status, 200);
});
