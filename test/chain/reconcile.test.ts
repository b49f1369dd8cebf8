/**
 * reconcileSplits on the real dev chain: after payments (through a receipt's payment address and
 * straight into the split) and a release, the chain and the indexed split transactions agree;
 * a row deleted or altered by hand is reported as a difference of exactly its amount; a payment
 * the worker has not read yet is no difference, because both sides are taken at its cursor.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { erc20Abi, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import { splitTransactions } from '../../src/db/schema.ts';
import { NotFound } from '../../src/lib/errors.ts';
import { reconcileSplits, type SplitReconciliation } from '../../src/payments/reconcile.ts';
import type { TestApp } from '../helpers/app.ts';
import { admin, signIn } from '../helpers/session.ts';
import { devWallet, CHAIN_WAIT_MS, PLATFORM, useChainApp } from './helpers.ts';
import { until, waitFor } from '../helpers/wait.ts';

const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM }, { workers: true });

const wallet = (i: number) => devWallet(f.tc, i);
const usdc = () => f.tc.chain.usdc.address;

async function send(hash: Promise<Hex>): Promise<Hex> {
  const h = await hash;
  assert.equal((await f.tc.chain.publicClient.waitForTransactionReceipt({ hash: h })).status, 'success');
  return h;
}
const transfer = (from: number, to: Hex, amount: bigint) =>
  // With a wallet's margin over the estimate (see transfer in payments.test.ts).
  send(wallet(from).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [to, amount], gas: 100_000n }));
const release = (from: number, split: Hex, account: number) =>
  send(wallet(from).writeContract({ address: split, abi: paymentSplitterAbi, functionName: 'release', args: [usdc(), devAccount(account).address] }));

/** Waits until `app`'s worker has read the chain's newest block, and one more pass after that. */
async function settle(app: TestApp = f.t): Promise<void> {
  const worker = app.deps.chainWorker!;
  const head = await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
  await until(() => (worker.lastPass?.head ?? 0n) >= head, CHAIN_WAIT_MS, 'the worker to read the newest block');
  const seen = worker.lastPass;
  await until(() => worker.lastPass !== seen, CHAIN_WAIT_MS, 'one more pass');
}

/** A merchant with a deployed split paying dev accounts 4 and 5 (and the platform). */
async function merchant(app: TestApp = f.t) {
  const s = await signIn(app);
  const res = await admin(app, s, 'POST', '/api/split/deploy', {
    recipients: [
      { address: devAccount(4).address, sharesBps: 7000 },
      { address: devAccount(5).address, sharesBps: 2950 },
      { address: PLATFORM, sharesBps: 50 },
    ],
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { s, wallet: s.wallet, split: res.body.split.address as Hex, key: await app.key(s.wallet) };
}

async function one(app: TestApp, merchantWallet: string): Promise<SplitReconciliation> {
  const report = await reconcileSplits({ db: app.deps.database.db, chain: f.tc.chain, wallet: merchantWallet });
  assert.equal(report.splits.length, 1);
  return report.splits[0]!;
}

describe('reconcileSplits', () => {
  test('matches after a receipt payment, a direct payment and a release; names the totals on both sides', async () => {
    const m = await merchant();
    const created = await f.t.call(m.key, 'POST', '/api/receipts', { id: 'rec-1', lineItems: [{ label: 'Tea', priceUsd: 2.5 }], totalUsd: 2.5 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const payTo = await waitFor(async () => {
      const res = await f.t.call(m.key, 'GET', '/api/receipts/rec-1');
      return (res.body.payTo as Hex | null) ?? undefined;
    }, CHAIN_WAIT_MS, 'the payment address');
    await transfer(0, payTo, 2_500_000n);
    await until(async () => (await f.t.call(m.key, 'GET', '/api/receipts/rec-1')).body.status === 'completed', CHAIN_WAIT_MS, 'the receipt to complete (swept into the split)');
    await transfer(1, m.split, 1_234_567n);
    await release(4, m.split, 4);
    await settle();

    const r = await one(f.t, m.wallet);
    assert.equal(r.merchant, m.wallet);
    assert.equal(r.split, m.split);
    const received = 2_500_000n + 1_234_567n;
    const released = (received * 7000n) / 10_000n;
    assert.deepEqual(r.chain, { received, released });
    assert.deepEqual(r.indexed, { received, released, payments: 2, releases: 1 });
    assert.deepEqual(r.difference, { received: 0n, released: 0n });
    assert.equal(r.matches, true);

    const all = await reconcileSplits({ db: f.t.deps.database.db, chain: f.tc.chain });
    assert.ok(all.splits.some((s) => s.split === m.split));
    assert.equal(all.ok, true, JSON.stringify(all.splits.filter((s) => !s.matches), (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
    assert.equal(all.token, usdc().toLowerCase());
    assert.notEqual(all.indexedThrough, null);
  });

  test('a payment row deleted by hand is a difference of exactly its amount; an altered release row too', async () => {
    const m = await merchant();
    await transfer(0, m.split, 3_000_000n);
    await transfer(1, m.split, 1_000_001n);
    await release(5, m.split, 5);
    await settle();
    assert.equal((await one(f.t, m.wallet)).matches, true);

    const db = f.t.deps.database.db;
    const [gone] = await db
      .delete(splitTransactions)
      .where(and(eq(splitTransactions.splitAddress, m.split), eq(splitTransactions.kind, 'payment'), eq(splitTransactions.amountUnits, '1000001')))
      .returning();
    assert.ok(gone, 'the row was there to delete');
    let r = await one(f.t, m.wallet);
    assert.equal(r.matches, false);
    assert.deepEqual(r.difference, { received: 1_000_001n, released: 0n });
    assert.equal(r.indexed.payments, 1);

    await db.update(splitTransactions).set({ amountUnits: '1' }).where(and(eq(splitTransactions.splitAddress, m.split), eq(splitTransactions.kind, 'release')));
    r = await one(f.t, m.wallet);
    const released = (4_000_001n * 2950n) / 10_000n;
    assert.deepEqual(r.chain, { received: 4_000_001n, released });
    assert.deepEqual(r.difference, { received: 1_000_001n, released: released - 1n });
    const all = await reconcileSplits({ db, chain: f.tc.chain });
    assert.equal(all.ok, false, 'one differing split fails the whole report');
    assert.deepEqual(all.splits.filter((s) => !s.matches).map((s) => s.split), [m.split]);

    // Put back as it was: the split matches again.
    await db.insert(splitTransactions).values(gone);
    const release5 = await db.select().from(splitTransactions).where(and(eq(splitTransactions.splitAddress, m.split), eq(splitTransactions.kind, 'release')));
    assert.equal(release5.length, 1);
    await db.update(splitTransactions).set({ amountUnits: released.toString() }).where(eq(splitTransactions.id, release5[0]!.id));
    assert.equal((await one(f.t, m.wallet)).matches, true);
  });

  test('a payment the worker has not read yet is no difference: both sides are taken at its cursor', async () => {
    const m = await merchant();
    await transfer(0, m.split, 700_000n);
    await settle();
    await f.t.deps.chainWorker!.stop();
    try {
      await transfer(1, m.split, 50_000n);
      const head = await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
      const report = await reconcileSplits({ db: f.t.deps.database.db, chain: f.tc.chain, wallet: m.wallet });
      assert.ok(report.blockNumber < head, 'compared at the cursor, behind the head');
      assert.equal(report.blockNumber, report.indexedThrough);
      assert.deepEqual(report.splits[0]!.chain, { received: 700_000n, released: 0n });
      assert.equal(report.ok, true);
    } finally {
      f.t.deps.chainWorker!.start();
    }
    await settle();
    const r = await one(f.t, m.wallet);
    assert.deepEqual([r.chain.received, r.indexed.received, r.matches], [750_000n, 750_000n, true]);
  });

  test('a merchant without a split contract is NotFound', async () => {
    const s = await signIn(f.t);
    await assert.rejects(reconcileSplits({ db: f.t.deps.database.db, chain: f.tc.chain, wallet: s.wallet }), NotFound);
  });
});
