/**
 * Every amount names its unit (DESIGN.md "Integrator API", Units; docs/decisions.md "Units"): USD
 * amounts are numbers in fields ending Usd, token amounts decimal strings of base units in fields
 * ending BaseUnits beside `token` and `decimals`, on the receipt list, detail and status answer,
 * the events (and so the webhooks) and split transactions; the spec's fields keep their names and
 * shapes beside them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { getAddress } from 'viem';
import { splitTransactions } from '../src/db/schema.ts';
import { getReceiptStatus } from '../src/domain/receipts.ts';
import { listSplitTransactions } from '../src/domain/split-transactions.ts';
import { expireReceipt } from '../src/payments/settle.ts';
import { randomWallet, type TestApp, useTestApp } from './helpers/app.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

/** A token address as a chain configures it (checksummed). */
const TOKEN = getAddress('0x5fbdb2315678afecb367f032d93f642f64180aa3');
const BASE_UNITS = /^(0|[1-9]\d*)$/;

const body = (id: string, extra: object = {}) => ({ id, lineItems: [{ label: 'Tea', priceUsd: 2.5, qty: 3 }], totalUsd: 7.5, ...extra });

/** Every member whose name says USD is a number; every BaseUnits member a decimal string. */
function assertUnitsNamed(where: string, obj: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(obj)) {
    if (/Usd$/.test(k)) assert.equal(typeof v, 'number', `${where}.${k} is a USD number`);
    if (/BaseUnits$/.test(k)) {
      assert.match(String(v), BASE_UNITS, `${where}.${k} is a decimal string of base units`);
      assert.equal(typeof v, 'string');
      assert.ok('decimals' in obj && 'token' in obj, `${where}: ${k} stands beside token and decimals`);
    }
  }
}

describe('receipts', () => {
  test('list, detail and status carry the total, paid and due in base units beside token and decimals; spec fields unchanged', async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    assert.equal((await t.call(key, 'POST', '/api/receipts', body('u-1'))).status, 201);

    const detail = (await t.call(key, 'GET', '/api/receipts/u-1')).body;
    const listed = (await t.call(key, 'GET', '/api/receipts')).body.receipts[0];
    const status = (await t.call(key, 'GET', '/api/receipts/status?receiptId=u-1')).body;
    for (const [where, r] of [['detail', detail], ['list', listed]] as const) {
      assert.equal(r.totalUsd, 7.5, `${where}: the spec's totalUsd`);
      assert.equal(r.currency, 'USD', `${where}: the spec's currency`);
      assert.equal(r.amountPaid, '0');
      assert.equal(r.amountDue, '7500000');
      assert.equal(r.totalBaseUnits, '7500000', `${where}: 7.5 USD is 7,500,000 base units of a 6-decimal token`);
      assert.equal(r.amountPaidBaseUnits, '0');
      assert.equal(r.amountDueBaseUnits, '7500000');
      assert.equal(r.decimals, 6);
      assert.equal(r.token, null, `${where}: this app runs without a chain`);
      assert.equal(r.refundedUsd, 0);
      assertUnitsNamed(where, r);
    }
    // The status answer: the spec's amount (USD number) and currency (the token) beside the named ones.
    assert.equal(status.amount, 7.5);
    assert.equal(status.currency, 'USDC');
    assert.equal(status.amountUsd, 7.5);
    assert.equal(status.totalBaseUnits, '7500000');
    assert.equal(status.amountDueBaseUnits, '7500000');
    assert.equal(status.decimals, 6);
    assert.equal(status.token, null);
    assertUnitsNamed('status', status);
  });

  test("with a chain, token is the chain's token as configured, on the detail, the list and the status", async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    assert.equal((await t.call(key, 'POST', '/api/receipts', body('u-2'))).status, 201);
    const store = t.deps.stores.receipts;
    assert.equal(JSON.parse(await store.detailJson(wallet, 'u-2', t.config.brandName, TOKEN)).token, TOKEN);
    const page = await store.pageJson(wallet, { limit: 10 }, t.config.brandName, TOKEN);
    assert.notEqual(page, 'unknown_cursor');
    const [entry] = JSON.parse((page as { json: string }).json);
    assert.equal(entry.token, TOKEN);
    assert.equal(entry.totalBaseUnits, '7500000');
    assert.equal((await getReceiptStatus(t.deps.database.db, wallet, 'u-2', TOKEN)).token, TOKEN);
    // The same list without a chain is another query (its own batch group), not this one's answer.
    const bare = await store.pageJson(wallet, { limit: 10 }, t.config.brandName);
    assert.equal(JSON.parse((bare as { json: string }).json)[0].token, null);
  });

  test('a total of the largest cents stays exact in base units', async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    const big = { id: 'u-big', lineItems: [{ label: 'Yacht', priceUsd: 123456789012.34 }], totalUsd: 123456789012.34 };
    assert.equal((await t.call(key, 'POST', '/api/receipts', big)).status, 201, 'accepted');
    const r = (await t.call(key, 'GET', '/api/receipts/u-big')).body;
    assert.equal(r.totalBaseUnits, '123456789012340000');
    assert.equal(r.amountDueBaseUnits, '123456789012340000');
  });
});

describe('events and webhooks', () => {
  test("a receipt event carries the base units beside token and decimals, and keeps the fields consumers read", async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    const created = await t.call(key, 'POST', '/api/receipts', body('u-exp', { expiresInMinutes: 1, metadata: { shopOrder: 'SO-1' } }));
    assert.equal(created.status, 201);
    const { createdAt } = (await t.call(key, 'GET', '/api/receipts/u-exp')).body;
    const db = t.deps.database.db;
    // The chain worker's expiry, with the chain's token as the scanner holds it (lower case).
    const expired = await db.transaction((tx) => expireReceipt(tx, { wallet, receiptId: 'u-exp' }, createdAt + 120_000, TOKEN.toLowerCase()));
    assert.equal(expired, true);
    const events = (await t.call(key, 'GET', '/api/events?type=receipt.expired')).body.events;
    assert.equal(events.length, 1);
    const data = events[0].data;
    assert.equal(data.totalUsd, 7.5);
    assert.equal(data.currency, 'USD', "the receipt's own currency, as its answers show it");
    assert.equal(data.amount, '7500000', 'kept for the consumers that read it');
    assert.equal(data.amountPaid, '0');
    assert.equal(data.amountDue, '7500000');
    assert.equal(data.totalBaseUnits, '7500000');
    assert.equal(data.amountPaidBaseUnits, '0');
    assert.equal(data.amountDueBaseUnits, '7500000');
    assert.equal(data.token, TOKEN, 'the token checksummed, as the receipt answers show it');
    assert.equal(data.decimals, 6);
    assert.deepEqual(data.metadata, { shopOrder: 'SO-1' });
    assertUnitsNamed('event', data);
    // The event by id is the same object (a webhook delivery carries it too).
    assert.deepEqual((await t.call(key, 'GET', `/api/events/${events[0].id}`)).body.data, data);
  });
});

describe('split transactions', () => {
  test('amount and fees (token units, the spec) beside their base units, token and decimals', async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    const split = randomWallet();
    await t.deps.database.db.insert(splitTransactions).values({
      wallet,
      id: `0x${'ab'.repeat(32)}:3`,
      kind: 'payment',
      splitAddress: split,
      counterparty: randomWallet(),
      receiptId: 'order-1',
      amountUnits: '7500001',
      feeUnits: '37500',
      currency: 'USDC',
      status: 'received',
      transactionHash: `0x${'ab'.repeat(32)}`,
      logIndex: 3,
      blockNumber: 12n,
      timestamp: Date.now(),
    });
    const [tx] = (await t.call(key, 'GET', '/api/split/transactions')).body;
    assert.equal(tx.amount, 7.500001);
    assert.equal(tx.fees, 0.0375);
    assert.equal(tx.currency, 'USDC');
    assert.equal(tx.amountBaseUnits, '7500001');
    assert.equal(tx.feesBaseUnits, '37500');
    assert.equal(tx.decimals, 6);
    assert.equal(tx.token, null, 'this app runs without a chain');
    assertUnitsNamed('split transaction', tx);
    const [withChain] = await listSplitTransactions(t.deps.database.db, wallet, undefined, TOKEN);
    assert.equal(withChain!.token, TOKEN);
  });
});
