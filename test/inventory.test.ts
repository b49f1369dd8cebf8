import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { randomWallet, type TestApp, useTestApp } from './helpers/app.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const coffee = { sku: 'COF-1', name: 'Coffee', priceUsd: 3.5 };

describe('POST /api/inventory', () => {
  test('creates an item with defaults: 201, unlimited stock, taxable, a stable id', async () => {
    const key = await t.key(randomWallet());
    const res = await t.call(key, 'POST', '/api/inventory', coffee);
    assert.equal(res.status, 201);
    assert.equal(res.body.ok, true);
    const item = res.body.item;
    assert.match(item.id, /^itm_[A-Za-z0-9_-]{16}$/);
    assert.deepEqual(
      { ...item, id: undefined, createdAt: undefined, updatedAt: undefined },
      { id: undefined, sku: 'COF-1', name: 'Coffee', priceUsd: 3.5, stockQty: -1, taxable: true, createdAt: undefined, updatedAt: undefined },
    );
    assert.ok(!('description' in item) && !('category' in item), 'absent optional fields are left out');
    assert.equal(typeof item.createdAt, 'number');
    assert.equal(item.createdAt, item.updatedAt);
  });

  test('the same sku updates the item: 200, same id and createdAt; omitted stockQty and taxable are kept', async () => {
    const key = await t.key(randomWallet());
    const first = await t.call(key, 'POST', '/api/inventory', { ...coffee, stockQty: 7, taxable: false, category: 'Drinks' });
    const second = await t.call(key, 'POST', '/api/inventory', { ...coffee, name: 'Flat white', priceUsd: 4.25 });
    assert.equal(second.status, 200);
    assert.equal(second.body.ok, true);
    const { item } = second.body;
    assert.equal(item.id, first.body.item.id);
    assert.equal(item.createdAt, first.body.item.createdAt);
    assert.equal(item.name, 'Flat white');
    assert.equal(item.priceUsd, 4.25);
    assert.equal(item.stockQty, 7);
    assert.equal(item.taxable, false);
    assert.equal(item.category, 'Drinks');
    const cleared = await t.call(key, 'POST', '/api/inventory', { ...coffee, stockQty: -1, category: null, description: 'Hot' });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.item.stockQty, -1);
    assert.equal(cleared.body.item.description, 'Hot');
    assert.ok(!('category' in cleared.body.item));
  });

  test('stockQty accepts -1 and 0', async () => {
    const key = await t.key(randomWallet());
    for (const [sku, stockQty] of [
      ['unlimited', -1],
      ['none', 0],
      ['some', 12],
    ] as const) {
      const res = await t.call(key, 'POST', '/api/inventory', { sku, name: sku, priceUsd: 0, stockQty });
      assert.equal(res.status, 201, sku);
      assert.equal(res.body.item.stockQty, stockQty);
    }
  });

  for (const [name, bad] of [
    ['missing sku', { name: 'A', priceUsd: 1 }],
    ['missing name', { sku: 'a', priceUsd: 1 }],
    ['missing priceUsd', { sku: 'a', name: 'A' }],
    ['empty sku', { sku: '', name: 'A', priceUsd: 1 }],
    ['65-character sku', { sku: 'x'.repeat(65), name: 'A', priceUsd: 1 }],
    ['sku with surrounding spaces', { sku: ' a ', name: 'A', priceUsd: 1 }],
    ['blank name', { sku: 'a', name: '   ', priceUsd: 1 }],
    ['price as a string', { sku: 'a', name: 'A', priceUsd: '1' }],
    ['negative price', { sku: 'a', name: 'A', priceUsd: -0.01 }],
    ['three-decimal price', { sku: 'a', name: 'A', priceUsd: 1.005 }],
    ['stockQty -2', { sku: 'a', name: 'A', priceUsd: 1, stockQty: -2 }],
    ['fractional stockQty', { sku: 'a', name: 'A', priceUsd: 1, stockQty: 1.5 }],
    ['stockQty as a string', { sku: 'a', name: 'A', priceUsd: 1, stockQty: '3' }],
    ['taxable as a string', { sku: 'a', name: 'A', priceUsd: 1, taxable: 'yes' }],
  ] as const) {
    test(`refuses ${name} with 400 invalid_input and stores nothing`, async () => {
      const key = await t.key(randomWallet());
      const res = await t.call(key, 'POST', '/api/inventory', bad);
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_input');
      assert.equal(typeof res.body.message, 'string');
      assert.deepEqual((await t.call(key, 'GET', '/api/inventory')).body.items, []);
    });
  }
});

describe('GET /api/inventory', () => {
  test("lists the merchant's own items by sku; another merchant's are invisible", async () => {
    const mine = await t.key(randomWallet());
    const theirs = await t.key(randomWallet());
    await t.call(mine, 'POST', '/api/inventory', { sku: 'b', name: 'B', priceUsd: 2 });
    await t.call(mine, 'POST', '/api/inventory', { sku: 'a', name: 'A', priceUsd: 1, description: 'First' });
    await t.call(theirs, 'POST', '/api/inventory', { sku: 'a', name: 'Theirs', priceUsd: 9 });
    const res = await t.call(mine, 'GET', '/api/inventory');
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.items.map((i: { sku: string; name: string; priceUsd: number }) => [i.sku, i.name, i.priceUsd]),
      [
        ['a', 'A', 1],
        ['b', 'B', 2],
      ],
    );
    assert.equal(res.body.items[0].description, 'First');
    const other = await t.call(theirs, 'GET', '/api/inventory');
    assert.deepEqual(
      other.body.items.map((i: { name: string }) => i.name),
      ['Theirs'],
    );
  });

  test('an empty inventory is an empty list', async () => {
    const res = await t.call(await t.key(randomWallet()), 'GET', '/api/inventory');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { items: [] });
  });
});

describe('inventory scopes', () => {
  test('inventory:read may list but not write; inventory:write may write but not list', async () => {
    const wallet = randomWallet();
    const reader = await t.key(wallet, { scopes: ['inventory:read'] });
    const writer = await t.key(wallet, { scopes: ['inventory:write'] });
    const denied = await t.call(reader, 'POST', '/api/inventory', coffee);
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error, 'forbidden');
    assert.equal((await t.call(writer, 'POST', '/api/inventory', coffee)).status, 201);
    const listDenied = await t.call(writer, 'GET', '/api/inventory');
    assert.equal(listDenied.status, 403);
    assert.equal(listDenied.body.error, 'forbidden');
    const listed = await t.call(reader, 'GET', '/api/inventory');
    assert.equal(listed.status, 200);
    assert.equal(listed.body.items.length, 1);
  });

  test('no key is 401 unauthorized', async () => {
    for (const method of ['GET', 'POST'] as const) {
      const res = await t.call(null, method, '/api/inventory', method === 'POST' ? coffee : undefined);
      assert.equal(res.status, 401);
      assert.equal(res.body.error, 'unauthorized');
    }
  });
});
