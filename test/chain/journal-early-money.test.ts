/**
 * A receipt acknowledged during a database outage, paid before its replay landed (issue 24, DESIGN
 * "Only the receipt's token is money": a payment address is checked for what already reached it
 * when it is first stored or replayed from the journal). As it happens: PostgreSQL (the test's own
 * cluster) stops, the merchant's POST /api/receipts is acknowledged from the journal, the buyer pays
 * the receipt's payment address (public data: merchant, receipt id, split, factory), PostgreSQL
 * comes back, the chain worker reads the payment's block before the journal has replayed (so the
 * scanner passes the transfer over: the address is not stored yet), then the replay lands. The
 * receipt is credited with exactly what arrived, swept once and completed, and says so once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { erc20Abi, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { paymentSalt, predictPaymentAddress } from '../../src/chain/payment-address.ts';
import { receipts, splitTransactions, webhookEvents } from '../../src/db/schema.ts';
import { freshPostgresDatabase, type TestApp } from '../helpers/app.ts';
import { postgresBinDir, PrivatePostgres } from '../helpers/private-postgres.ts';
import { anvilClient, deployShop, devWallet, PLATFORM, startChainApp, startTestChain, type Shop, type TestChain } from './helpers.ts';

const bin = postgresBinDir();
const skip = bin === undefined ? 'initdb/pg_ctl not found; install PostgreSQL to run the outage test' : false;

describe('a receipt journaled during an outage and paid before its replay', { skip, timeout: 240_000 }, () => {
  let pg: PrivatePostgres;
  let tc: TestChain;
  let t: TestApp;
  let drop: () => Promise<void>;
  before(async () => {
    pg = await PrivatePostgres.create(bin!);
    await pg.start();
    const fresh = await freshPostgresDatabase(pg.url);
    drop = fresh.drop.bind(fresh);
    tc = await startTestChain();
    // The worker and the journal's replay loop are not started: the test drives both, in the
    // order that makes the early-money path the only one that can credit the payment.
    t = await startChainApp(tc.chain, { DATABASE_URL: fresh.url, CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });
  });
  after(async () => {
    await t?.close();
    await tc?.close();
    if (pg !== undefined) {
      if (!(await pg.running())) await pg.start();
      await drop?.();
      await pg.destroy();
    }
  });

  test('credited with exactly what arrived, swept once and completed once the journal replays', async () => {
    const worker = t.deps.chainWorker!;
    const db = t.deps.database.db;
    const sh: Shop = await deployShop(t);
    await worker.pass();
    // The key has been confirmed by the database once: during the outage the service still knows it.
    assert.equal((await t.call(sh.key, 'GET', '/api/receipts')).status, 200);

    await pg.stop();
    const created = await t.call(sh.key, 'POST', '/api/receipts', { id: 'outage-1', lineItems: [{ label: 'Item', priceUsd: 5 }], totalUsd: 5 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.degraded, true, 'acknowledged from the journal');

    // The buyer pays the receipt's address while the database is away.
    const payTo = predictPaymentAddress({ factory: tc.chain.paymentFactory!, split: sh.split, salt: paymentSalt(sh.wallet, 'outage-1') }).toLowerCase() as Hex;
    const hash = await devWallet(tc, 5).writeContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [payTo, 5_000_000n] });
    const paid = await tc.chain.publicClient.waitForTransactionReceipt({ hash });
    assert.equal(paid.status, 'success');
    await anvilClient(tc).mine({ blocks: 2 });

    await pg.start();
    // The worker reads the payment's block before the replay: the address is unknown, the transfer passed over.
    await worker.pass();
    await worker.pass();
    assert.ok(worker.lastPass!.head >= paid.blockNumber, 'the scanner has read past the payment');
    assert.equal((await db.select().from(receipts).where(eq(receipts.id, 'outage-1'))).length, 0, 'not replayed yet');

    const replay = await t.deps.journal.replayNow();
    assert.ok(JSON.stringify(replay).length > 0);
    const [row] = await db.select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'outage-1')));
    assert.ok(row, 'the replay landed');

    const detail = async () => (await t.call(sh.key, 'GET', '/api/receipts/outage-1')).body;
    let d = await detail();
    for (let i = 0; i < 30 && d.status !== 'completed'; i++) {
      await worker.pass();
      await anvilClient(tc).mine({ blocks: 1 });
      d = await detail();
    }
    assert.equal(d.status, 'completed', JSON.stringify(d));
    assert.equal(d.exception, null);
    assert.equal(d.amountPaid, '5000000', 'exactly what arrived');
    assert.equal(d.payTo, payTo, 'the address the buyer paid');
    assert.equal(d.payer, devAccount(5).address.toLowerCase());
    assert.equal(d.transactionHash, hash.toLowerCase());
    const balance = await tc.chain.publicClient.readContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [payTo] });
    assert.equal(balance, 0n, 'swept into the split');

    // Once: the split's indexed credit for the receipt, the events, and nothing more on further passes.
    for (let i = 0; i < 3; i++) {
      await worker.pass();
      await anvilClient(tc).mine({ blocks: 1 });
    }
    const credits = await db
      .select({ amount: splitTransactions.amountUnits })
      .from(splitTransactions)
      .where(and(eq(splitTransactions.wallet, sh.wallet), eq(splitTransactions.receiptId, 'outage-1')));
    assert.equal(credits.reduce((s, c) => s + BigInt(c.amount), 0n), 5_000_000n, 'the split transactions credit the receipt 5 USDC, once');
    const splitBalance = await tc.chain.publicClient.readContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [sh.split] });
    assert.equal(splitBalance, 5_000_000n, 'and the split holds exactly that');
    const events = await db.select({ type: webhookEvents.type, payload: webhookEvents.payload }).from(webhookEvents).where(eq(webhookEvents.wallet, sh.wallet));
    const mine = events.filter((e) => (e.payload as { data: { receiptId?: string } }).data.receiptId === 'outage-1').map((e) => e.type).sort();
    assert.deepEqual(mine, ['receipt.completed', 'receipt.payment_received']);
    assert.equal((await detail()).amountPaid, '5000000');
  });
});
