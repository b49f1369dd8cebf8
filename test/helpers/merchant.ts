/**
 * A merchant set up through the domain functions the admin app will use: a split, a shop
 * configuration and inventory, each optional.
 */
import assert from 'node:assert/strict';
import type { Db } from '../../src/db/client.ts';
import { saveShopConfig, type ShopConfigInput } from '../../src/domain/shop.ts';
import { createSubscription } from '../../src/gateway/subscriptions.ts';
import { storeSplitConfig } from '../../src/domain/splits.ts';
import type { Scope } from '../../src/gateway/scopes.ts';
import { randomWallet, type TestApp } from './app.ts';

export interface MerchantOptions {
  split?: boolean;
  shop?: ShopConfigInput;
  items?: Record<string, unknown>[];
  scopes?: Scope[];
}

export interface Merchant {
  wallet: string;
  key: string;
  /** Item ids by sku, as the API assigned them. */
  ids: Record<string, string>;
}

export async function setUpMerchant(t: TestApp, opts: MerchantOptions = {}): Promise<Merchant> {
  const wallet = randomWallet();
  const db = t.deps.database.db;
  if (opts.split ?? true) {
    await storeSplitConfig(db, wallet, {
      address: null,
      recipients: [
        { address: wallet, sharesBps: 9950 },
        { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 },
      ],
    });
  }
  if (opts.shop !== undefined) await saveShopConfig(db, wallet, opts.shop);
  const admin = await t.key(wallet);
  const ids: Record<string, string> = {};
  for (const item of opts.items ?? []) {
    const res = await t.call(admin, 'POST', '/api/inventory', item);
    if (res.status !== 201) throw new Error(`inventory set-up failed: ${res.status} ${JSON.stringify(res.body)}`);
    ids[res.body.item.sku] = res.body.item.id;
  }
  const key = opts.scopes === undefined ? admin : await t.key(wallet, { scopes: opts.scopes });
  return { wallet, key, ids };
}

/**
 * A merchant written straight into a database, for tests that run the service as a process: a
 * key with a budget no test reaches, and a split paying `platform` its 0.5%.
 */
export async function keyedMerchant(db: Db, platform: string): Promise<{ wallet: string; key: string }> {
  const wallet = randomWallet();
  // Every scope, as the operator would grant them (users:read included).
  const key = (await createSubscription(db, { wallet, rateLimitPerMinute: 1_000_000, grantedBySuperadmin: true })).primaryKey;
  await storeSplitConfig(db, wallet, {
    address: null,
    recipients: [
      { address: wallet, sharesBps: 9950 },
      { address: platform, sharesBps: 50 },
    ],
  });
  return { wallet, key };
}

/**
 * A field the two creations refuse alike: `POST /api/receipts` with `receipt` and `POST /api/orders`
 * with `order` both answer 400 `invalid_input` whose message matches `says`, and the merchant
 * (with no receipt before) still has none.
 */
export async function assertRefusedOnReceiptsAndOrders(t: TestApp, m: Merchant, receipt: Record<string, unknown>, order: Record<string, unknown>, says: RegExp): Promise<void> {
  for (const [path, body] of [['/api/receipts', receipt], ['/api/orders', order]] as const) {
    const res = await t.call(m.key, 'POST', path, body);
    assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error, 'invalid_input');
    assert.match(res.body.message, says);
  }
  assert.equal((await t.call(m.key, 'GET', '/api/receipts')).body.receipts.length, 0, 'nothing stored');
}
