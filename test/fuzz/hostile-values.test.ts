/**
 * Inputs the random fuzzer (routes.test.ts) once let through as a 500 or a misleading answer,
 * kept here as fixed cases on every route that takes them: object-prototype names where a name
 * is looked up (`product: "__proto__"`), and lone UTF-16 surrogates (`"\ud800"`), which JSON.parse
 * accepts but which are no character, in labels, names, ids, URLs and query values. Each answer
 * is 400 invalid_input whose message names the actual problem; well-formed text still passes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { jsonProblem } from '../../src/http/limits.ts';
import { randomWallet, startTestApp, type TestApp } from '../helpers/app.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';

let t: TestApp;
let key: string;
let wallet: string;
let s: Session;

before(async () => {
  t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000' });
  wallet = randomWallet();
  key = await t.key(wallet);
  s = await signIn(t);
});
after(async () => {
  await t.close();
});

const JSON_TYPE = { 'content-type': 'application/json' };
const HOLE = '@@hostile@@';
/** JSON text of `body` with the string HOLE replaced by `escaped` (JSON escape text, e.g. \ud800). */
const withHole = (body: unknown, escaped: string) => JSON.stringify(body).replace(HOLE, escaped);

/** Lone surrogates as JSON escapes: high alone, low alone, reversed pair, high before a letter, high at the end. */
const LONE = ['\\ud800', '\\udfff', 'a\\udc00\\ud800b', '\\ud83dA', 'end\\ud83d'];

interface Target {
  name: string;
  method: 'POST' | 'PUT';
  url: string;
  auth: 'key' | 'session' | 'public';
  body: Record<string, unknown>;
}

const targets = (): Target[] => [
  { name: 'receipt line item label', method: 'POST', url: '/api/receipts', auth: 'key', body: { id: `r-${Math.random()}`, lineItems: [{ label: HOLE, priceUsd: 1 }], totalUsd: 1 } },
  { name: 'receipt id', method: 'POST', url: '/api/receipts', auth: 'key', body: { id: HOLE, lineItems: [{ label: 'x', priceUsd: 1 }], totalUsd: 1 } },
  { name: 'inventory name', method: 'POST', url: '/api/inventory', auth: 'key', body: { sku: 'hv-1', name: HOLE, priceUsd: 1, stockQty: 1, taxable: false } },
  { name: 'inventory sku', method: 'POST', url: '/api/inventory', auth: 'key', body: { sku: HOLE, name: 'n', priceUsd: 1, stockQty: 1, taxable: false } },
  { name: 'shop name', method: 'POST', url: '/api/shop/config', auth: 'session', body: { processingFeePct: 0, name: HOLE } },
  { name: 'subscription name', method: 'POST', url: '/api/admin/subscriptions', auth: 'session', body: { name: HOLE } },
  { name: 'webhook URL', method: 'POST', url: '/api/admin/webhooks', auth: 'session', body: { url: `https://example.com/${HOLE}` } },
  { name: 'profile display name', method: 'PUT', url: '/api/users/me', auth: 'session', body: { displayName: HOLE } },
  { name: 'terminal line item label', method: 'POST', url: '/api/receipts/terminal', auth: 'session', body: { lineItems: [{ label: HOLE, priceUsd: 1 }] } },
  { name: 'tracking status receipt id', method: 'POST', url: '/api/receipts/status', auth: 'public', body: { receiptId: HOLE, wallet: randomWallet(), status: 'link_opened' } },
  { name: 'sign-in wallet', method: 'POST', url: '/api/auth/challenge', auth: 'public', body: { wallet: HOLE } },
];

function send(target: Target, payload: string) {
  if (target.auth === 'session') return admin(t, s, target.method, target.url, payload, JSON_TYPE);
  return t.call(target.auth === 'key' ? key : null, target.method, target.url, payload, JSON_TYPE);
}

describe('lone UTF-16 surrogates', () => {
  test('the JSON scanner finds them, escaped or raw, and leaves pairs and escaped backslashes alone', () => {
    for (const text of ['"\\ud800"', '"\\uDBFF"', '"\\udc00"', '"\\ud800\\u0041"', '{"\\ud800":1}', '["ok","\\udfff"]', '"\ud800"', '"\udc00x"']) {
      assert.equal(jsonProblem(text, 32), 'surrogate', text);
    }
    for (const text of ['"\\ud83d\\ude00"', '"\ud83d\ude00"', '"\\\\ud800"', '"\\u00e9\\u20ac"', '"plain"', '"\\"\\ud83d\\ude00\\""']) {
      assert.equal(jsonProblem(text, 32), null, text);
    }
  });

  test('in any string of a JSON body they are 400 invalid_input naming the surrogate, never a 500', async () => {
    for (const target of targets()) {
      for (const lone of LONE) {
        const res = await send(target, withHole(target.body, lone));
        assert.equal(res.status, 400, `${target.name} ${lone}: ${res.status} ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error, 'invalid_input', target.name);
        assert.match(res.body.message, /surrogate/, `${target.name}: ${res.body.message}`);
      }
    }
  });

  test('a well-formed pair (an emoji written as two escapes) is stored and read back', async () => {
    const id = `emoji-${Date.now()}`;
    const res = await t.call(key, 'POST', '/api/receipts', withHole({ id, lineItems: [{ label: HOLE, priceUsd: 1 }], totalUsd: 1 }, 'cake \\ud83c\\udf82'), JSON_TYPE);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const detail = await t.call(key, 'GET', `/api/receipts/${id}`);
    assert.equal(detail.body.lineItems[0].label, 'cake 🎂');
  });

  test('percent-encoded in a path parameter they are 400 invalid_input; in a query value, text as sent; never a 500', async () => {
    for (const url of ['/api/receipts/%ED%A0%80', '/api/receipts/a%ED%B0%80/refunds', '/api/receipts?limit=%ED%A0%80']) {
      const res = await t.call(key, 'GET', url);
      assert.equal(res.status, 400, `${url}: ${res.status} ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'invalid_input', url);
    }
    // The query parser keeps an undecodable value as the text that was sent: an id nobody has.
    const res = await t.call(key, 'GET', '/api/receipts/status?receiptId=%ED%A0%80');
    assert.equal(res.status, 404, JSON.stringify(res.body));
    assert.equal(res.body.message, 'Receipt %ED%A0%80 not found');
  });
});

describe('object-prototype names where a name is looked up', () => {
  const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__', 'prototype'];

  test('product: each is an unknown product (400 naming the product), not a 500', async () => {
    for (const product of names) {
      const res = await admin(t, s, 'POST', '/api/admin/subscriptions', { product });
      assert.equal(res.status, 400, `${product}: ${res.status} ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'invalid_input');
      assert.match(res.body.message, new RegExp(`Unknown product "${product}"`));
    }
    const listed = await admin(t, s, 'GET', '/api/admin/subscriptions');
    assert.equal(listed.body.subscriptions.length, 0, 'nothing was created');
  });

  test('scopes, webhook events and tracking statuses: refused as unknown, not a 500', async () => {
    const scoped = await admin(t, s, 'POST', '/api/admin/subscriptions', { scopes: ['constructor', '__proto__'] });
    assert.equal(scoped.status, 400);
    assert.match(scoped.body.message, /Unknown scopes: constructor, __proto__/);
    const events = await admin(t, s, 'POST', '/api/admin/webhooks', { url: 'https://93.184.215.14/hook', events: ['constructor'] });
    assert.equal(events.status, 400);
    assert.match(events.body.message, /Unknown events: constructor/);
    for (const status of ['constructor', '__proto__', 'toString']) {
      const res = await t.call(null, 'POST', '/api/receipts/status', { receiptId: 'x', wallet: randomWallet(), status });
      assert.equal(res.status, 400, status);
      assert.equal(res.body.error, 'invalid_input');
      assert.match(res.body.message, /status must be one of/);
    }
  });
});
