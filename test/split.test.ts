import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { splitConfigs } from '../src/db/schema.ts';
import {
  listSplitTransactions,
  recordSplitTransaction,
  unitsToTokens,
} from '../src/domain/split-transactions.ts';
import type { Db } from '../src/db/client.ts';
import { SplitService } from '../src/payments/split-service.ts';
import { splitTransfer } from './helpers/split-transactions.ts';
import { appWithDatabaseAway, randomWallet, startTestApp, type TestApp } from './helpers/app.ts';

let t: TestApp;
let db: Db;
before(async () => {
  t = await startTestApp();
  db = t.deps.database.db;
});
after(async () => {
  await t.close();
});

describe('GET /api/split/deploy', () => {
  test('unconfigured: 200 with address null and no recipients', async () => {
    const key = await t.key(randomWallet());
    const res = await t.call(key, 'GET', '/api/split/deploy');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { split: { address: null, recipients: [], version: null } });
  });

  test("configured: the merchant's own address and recipients, and no one else's", async () => {
    const wallet = randomWallet();
    const address = randomWallet();
    const recipients = [
      { address: randomWallet(), sharesBps: 9950 },
      { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 },
    ];
    await db.insert(splitConfigs).values({ wallet, address, recipients, createdAt: Date.now() });
    const res = await t.call(await t.key(wallet), 'GET', '/api/split/deploy');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { split: { address, recipients, version: 1 } });
    const other = await t.call(await t.key(randomWallet()), 'GET', '/api/split/deploy');
    assert.deepEqual(other.body, { split: { address: null, recipients: [], version: null } });
  });
});

describe('GET /api/split/transactions', () => {
  test('lists the merchant transactions newest first, amounts in token units', async () => {
    const wallet = randomWallet();
    const split = randomWallet();
    const first = splitTransfer(wallet, {
      splitAddress: split,
      receiptId: 'r-1',
      amountUnits: '1500000',
      feeUnits: '7500',
      timestamp: Date.UTC(2024, 0, 2, 3, 4, 5, 6),
    });
    const second = splitTransfer(wallet, { splitAddress: split, amountUnits: '250', feeUnits: '0', timestamp: first.timestamp + 1000 });
    assert.equal(await recordSplitTransaction(db, first), true);
    assert.equal(await recordSplitTransaction(db, second), true);
    const res = await t.call(await t.key(wallet), 'GET', '/api/split/transactions');
    assert.equal(res.status, 200);
    assert.equal(res.body.length, 2);
    assert.equal(res.body[0].transactionHash, second.transactionHash);
    assert.equal(res.body[0].receiptId, null);
    assert.equal(res.body[0].amount, 0.00025);
    assert.equal(res.body[0].fees, 0);
    assert.deepEqual(res.body[1], {
      id: `${first.transactionHash}:0`,
      receiptId: 'r-1',
      amount: 1.5,
      currency: 'USDC',
      status: 'received',
      timestamp: '2024-01-02T03:04:05.006Z',
      transactionHash: first.transactionHash,
      fees: 0.0075,
      amountBaseUnits: '1500000',
      feesBaseUnits: '7500',
      token: null,
      decimals: 6,
    });
  });

  test('amounts beyond what a JSON number holds exactly are exact in amountBaseUnits and feesBaseUnits', async () => {
    const wallet = randomWallet();
    const huge = splitTransfer(wallet, { splitAddress: randomWallet(), amountUnits: '123456789012345678901', feeUnits: '617283945061728394' });
    assert.equal(await recordSplitTransaction(db, huge), true);
    const [row] = (await t.call(await t.key(wallet), 'GET', '/api/split/transactions')).body;
    assert.equal(row.amountBaseUnits, '123456789012345678901');
    assert.equal(row.feesBaseUnits, '617283945061728394');
    assert.notEqual(String(BigInt(Math.round(row.amount * 1e6))), row.amountBaseUnits, 'the number alone would have lost digits');
  });

  test('address filters by split address or counterparty, within the merchant only', async () => {
    const a = randomWallet();
    const b = randomWallet();
    const splitA = randomWallet();
    const payer = randomWallet();
    const recipient = randomWallet();
    const paid = splitTransfer(a, { splitAddress: splitA, counterparty: payer });
    const released = splitTransfer(a, { kind: 'release', splitAddress: splitA, counterparty: recipient, timestamp: paid.timestamp + 1 });
    const elsewhere = splitTransfer(a, {});
    const theirs = splitTransfer(b, { counterparty: payer });
    for (const row of [paid, released, elsewhere, theirs]) await recordSplitTransaction(db, row);
    const keyA = await t.key(a);
    const keyB = await t.key(b);
    const hashes = (res: { body: { transactionHash: string }[] }) => res.body.map((r) => r.transactionHash);

    assert.deepEqual(hashes(await t.call(keyA, 'GET', `/api/split/transactions?address=${payer}`)), [paid.transactionHash]);
    assert.deepEqual(
      hashes(await t.call(keyA, 'GET', `/api/split/transactions?address=${recipient.toUpperCase().replace('0X', '0x')}`)),
      [released.transactionHash],
    );
    assert.deepEqual(
      hashes(await t.call(keyA, 'GET', `/api/split/transactions?address=${splitA}`)),
      [released.transactionHash, paid.transactionHash],
    );
    assert.equal((await t.call(keyA, 'GET', '/api/split/transactions')).body.length, 3);
    assert.deepEqual(hashes(await t.call(keyB, 'GET', '/api/split/transactions')), [theirs.transactionHash]);
    assert.deepEqual(hashes(await t.call(keyB, 'GET', `/api/split/transactions?address=${splitA}`)), []);
  });

  test('an address that is not 0x + 40 hex is 400 invalid_input', async () => {
    const key = await t.key(randomWallet());
    for (const bad of ['0x123', 'abc', randomWallet() + '0']) {
      const res = await t.call(key, 'GET', `/api/split/transactions?address=${bad}`);
      assert.equal(res.status, 400, bad);
      assert.equal(res.body.error, 'invalid_input');
    }
  });

  test('recording the same log twice stores it once', async () => {
    const wallet = randomWallet();
    const row = splitTransfer(wallet, { logIndex: 3 });
    assert.equal(await recordSplitTransaction(db, row), true);
    assert.equal(await recordSplitTransaction(db, { ...row, amountUnits: '999' }), false);
    const rows = await listSplitTransactions(db, wallet);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.amount, 1);
  });

  test('base units convert to token units exactly', () => {
    assert.equal(unitsToTokens('0'), 0);
    assert.equal(unitsToTokens('1'), 0.000001);
    assert.equal(unitsToTokens('1500000'), 1.5);
    assert.equal(unitsToTokens('10000000'), 10);
    assert.equal(unitsToTokens('123456789012'), 123456.789012);
    assert.equal(unitsToTokens('300000'), 0.3);
    assert.throws(() => unitsToTokens('1.5'), RangeError);
    assert.throws(() => unitsToTokens('-1'), RangeError);
  });
});

describe('POST /api/split/withdraw', () => {
  const expected = {
    error: 'deprecated',
    reason: 'use_connected_wallet',
    message: "Withdraw from your own wallet: call the split contract's release(token, account) function",
  };

  test('is 410 deprecated for any key, whatever the body', async () => {
    const key = await t.key(randomWallet(), { scopes: [] });
    for (const body of [{ amount: 1 }, undefined]) {
      const res = await t.call(key, 'POST', '/api/split/withdraw', body);
      assert.equal(res.status, 410);
      assert.deepEqual(res.body, expected);
      assert.ok(res.headers['x-correlation-id']);
    }
    const malformed = await t.call(key, 'POST', '/api/split/withdraw', '{not json', { 'content-type': 'application/json' });
    assert.equal(malformed.status, 410);
    assert.deepEqual(malformed.body, expected);
  });

  test('still needs a valid key', async () => {
    assert.equal((await t.call(null, 'POST', '/api/split/withdraw', {})).status, 401);
    assert.equal((await t.call('not-a-key', 'POST', '/api/split/withdraw', {})).status, 401);
  });
});

describe('split routes: credentials and outage', () => {
  test('a key without split:read is 403 forbidden; no key is 401', async () => {
    const narrow = await t.key(randomWallet(), { scopes: ['receipts:read', 'users:read'] });
    for (const url of ['/api/split/deploy', '/api/split/transactions']) {
      const res = await t.call(narrow, 'GET', url);
      assert.equal(res.status, 403, url);
      assert.equal(res.body.error, 'forbidden');
      assert.equal((await t.call(null, 'GET', url)).status, 401);
    }
  });

  test('with the database unreachable, transactions answer 503 rather than an empty list', async () => {
    const { app, close } = await appWithDatabaseAway(t, (unreachable) => ({
      splits: new SplitService({ db: unreachable, config: t.config, chain: t.deps.chain, deployer: t.deps.deployer, approvals: t.deps.auth }),
    }));
    try {
      const key = await t.key(randomWallet());
      const res = await app.inject({ method: 'GET', url: '/api/split/transactions', headers: { 'ocp-apim-subscription-key': key } });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().error, 'database_unavailable');
    } finally {
      await close();
    }
  });
});
