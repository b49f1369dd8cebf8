import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ItemRow } from '../../src/db/order-batch.ts';
import { LimitedItems } from '../../src/db/order-store.ts';

const shop = '0x00000000000000000000000000000000000000aa';
const other = '0x00000000000000000000000000000000000000bb';
const row = (wallet: string, sku: string, stockQty: number): ItemRow => ({ wallet, id: `inv_${sku}`, sku, name: sku, priceCents: 100n, taxable: true, stockQty });
const order = (wallet: string, ...refs: [by: 'sku' | 'id', value: string][]) => ({ wallet, refs: refs.map(([by, value]) => ({ by, value, qty: 1 })) });

test('an item read with limited stock is named by its sku and by its id, for its merchant only', () => {
  const limited = new LimitedItems();
  assert.equal(limited.named([order(shop, ['sku', 'tea'])]), false, 'nothing read yet');
  limited.learn([row(shop, 'tea', 5), row(shop, 'cake', -1)]);
  assert.equal(limited.named([order(shop, ['sku', 'tea'])]), true);
  assert.equal(limited.named([order(shop, ['id', 'inv_tea'])]), true);
  assert.equal(limited.named([order(shop, ['sku', 'cake'])]), false, 'unlimited');
  assert.equal(limited.named([order(other, ['sku', 'tea'])]), false, "another merchant's sku");
  assert.equal(limited.named([order(shop, ['id', 'tea'])]), false, 'a sku is not an id');
  assert.equal(limited.named([order(shop, ['sku', 'cake']), order(shop, ['sku', 'cake'], ['sku', 'tea'])]), true, 'any order of the batch');
  assert.equal(limited.named([order(shop, ['sku', 'tea'])]), true, 'out of stock is still limited');
  limited.learn([row(shop, 'tea', 0)]);
  assert.equal(limited.named([order(shop, ['sku', 'tea'])]), true);
});

test('a later read corrects it: an item made unlimited is forgotten, one made limited is learnt', () => {
  const limited = new LimitedItems();
  limited.learn([row(shop, 'tea', 5)]);
  limited.learn([row(shop, 'tea', -1)]);
  assert.equal(limited.named([order(shop, ['sku', 'tea'])]), false);
  assert.equal(limited.named([order(shop, ['id', 'inv_tea'])]), false);
  limited.learn([row(shop, 'tea', 3)]);
  assert.equal(limited.named([order(shop, ['id', 'inv_tea'])]), true);
});

test('it stays bounded: past its size it starts again empty', () => {
  const limited = new LimitedItems(4);
  limited.learn([row(shop, 'a', 1), row(shop, 'b', 1)]); // four keys: two skus, two ids
  assert.equal(limited.named([order(shop, ['sku', 'a'])]), true);
  limited.learn([row(shop, 'c', 1)]);
  for (const sku of ['a', 'b', 'c']) assert.equal(limited.named([order(shop, ['sku', sku])]), false, sku);
  limited.learn([row(shop, 'd', 1)]);
  assert.equal(limited.named([order(shop, ['sku', 'd'])]), true);
});
