/**
 * Money other than the receipt's token at a payment address, found by balance (never by logs):
 * native ETH and configured tokens, read when the payment page opens (throttled per receipt), when
 * a hint's transaction is mined, and before the receipt expires. It gives wrong_token, never counts
 * toward the total, never moves the status nor stops the expiry (a stranger's 1 wei must not hold an
 * order's stock forever), and can be swept into the split.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { createWalletClient, erc20Abi, http, type Address, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { deployTestUsdc } from '../../src/chain/test-usdc.ts';
import { receipts, webhookEvents } from '../../src/db/schema.ts';
import { balanceTokensOf, PAGE_CHECK_EVERY_MS } from '../../src/payments/other-money.ts';
import { admin } from '../helpers/session.ts';
import type { TestApp } from '../helpers/app.ts';
import { postReceipt, deployShop, CHAIN_WAIT_MS, PLATFORM, startChainApp, startTestChain, type TestChain, type Shop } from './helpers.ts';
import { until, waitFor } from '../helpers/wait.ts';

let tc: TestChain;
let t: TestApp;
let otherToken: Address;
before(async () => {
  tc = await startTestChain();
  const deployer = tc.chain.walletClient!;
  otherToken = (await deployTestUsdc({ walletClient: deployer, publicClient: tc.chain.publicClient, holders: [devAccount(2).address], amountEach: 10n ** 12n })).address;
  t = await startChainApp(tc.chain, { CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM, BALANCE_TOKENS: otherToken });
  t.deps.startWorkers();
});
after(async () => {
  await t?.close();
  await tc?.close();
});

const wallet = (i: number) => createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(i) });
const pub = () => tc.chain.publicClient;

const shop = (): Promise<Shop> => deployShop(t);

async function createReceipt(sh: Shop, id: string) {
  const search = await postReceipt(t, sh, id, 4);
  // The worker stores the address within a pass or two.
  await waitFor(async () => ((await row(sh, id)).payAddress !== null ? true : undefined), CHAIN_WAIT_MS, `${id}'s address to be stored`);
  return { search, payTo: (await page(id, search)).payment.payTo };
}

async function page(id: string, search: string) {
  const res = await t.call(null, 'GET', `/api/pay/${id}${search}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as { status: string; exception: string | null; payment: { payTo: Hex; paid: string } };
}

/** Makes the receipt PAGE_CHECK_EVERY_MS old, from when its page's loads ask for reads. */
async function aMinuteOld(sh: Shop, id: string) {
  await t.deps.database.db.update(receipts).set({ createdAt: Date.now() - PAGE_CHECK_EVERY_MS - 1 }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
}

async function row(sh: Shop, id: string) {
  const [r] = await t.deps.database.db.select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
  assert.ok(r);
  return r;
}

async function send(i: number, tx: { to: Hex; data?: Hex; value?: bigint }): Promise<Hex> {
  const hash = await wallet(i).sendTransaction(tx);
  assert.equal((await pub().waitForTransactionReceipt({ hash })).status, 'success');
  return hash;
}

const wrongToken = (sh: Shop, id: string) =>
  waitFor(async () => {
    const d = (await t.call(sh.key, 'GET', `/api/receipts/${id}`)).body as { status: string; exception: string | null; amountPaid: string };
    return d.exception === 'wrong_token' ? d : undefined;
  }, CHAIN_WAIT_MS, `${id} to show wrong_token`);

describe('other money at a payment address, by balance', () => {
  test('which tokens: ETH always, then the configured ones, never the receipt’s own', () => {
    assert.deepEqual(balanceTokensOf({ name: 'dev', usdc: tc.chain.usdc }, undefined), []);
    assert.deepEqual(balanceTokensOf({ name: 'dev', usdc: tc.chain.usdc }, [otherToken, tc.chain.usdc.address, otherToken.toLowerCase()]), [otherToken]);
    assert.equal(balanceTokensOf({ name: 'base', usdc: tc.chain.usdc }, undefined).length, 2, 'USDT and DAI on Base');
  });

  test('ETH sent with no log at all: opening the payment page finds it, wrong_token, never counted, and the merchant sweeps it into the split', async () => {
    const sh = await shop();
    const r = await createReceipt(sh, 'eth-1');
    await send(3, { to: r.payTo, value: 10n ** 15n });
    // The page still open a minute on asks for a read.
    await aMinuteOld(sh, 'eth-1');
    await page('eth-1', r.search);
    const d = await wrongToken(sh, 'eth-1');
    assert.equal(d.status, 'pending', 'other money alone never moves the status');
    assert.equal(d.amountPaid, '0', 'ETH never counts toward the total');
    assert.deepEqual((await row(sh, 'eth-1')).otherMoney, { '0x0000000000000000000000000000000000000000': (10n ** 15n).toString() });

    const offer = await admin(t, sh.s, 'GET', '/api/admin/receipts/eth-1/sweep?token=eth');
    assert.equal(offer.status, 200, JSON.stringify(offer.body));
    await send(4, { to: offer.body.transaction.to, data: offer.body.transaction.data });
    assert.equal(await pub().getBalance({ address: sh.split }), 10n ** 15n);
    // Swept away, it still arrived: the receipt keeps wrong_token.
    await page('eth-1', r.search);
    assert.equal((await wrongToken(sh, 'eth-1')).exception, 'wrong_token');
  });

  test('a page younger than PAGE_CHECK_EVERY_MS asks for no read: its buyer has sent nothing yet; a minute on, a load asks', async () => {
    const sh = await shop();
    const r = await createReceipt(sh, 'young-1');
    for (let i = 0; i < 3; i++) await page('young-1', r.search);
    const young = await row(sh, 'young-1');
    assert.deepEqual([young.balancesCheckDue, young.balancesCheckedAt], [null, null], 'no read asked for, none made');
    await aMinuteOld(sh, 'young-1');
    await page('young-1', r.search);
    await until(async () => (await row(sh, 'young-1')).balancesCheckedAt !== null, CHAIN_WAIT_MS, 'the read the load asked for');
  });

  test('page loads cannot flood the node: one read per receipt per PAGE_CHECK_EVERY_MS', async () => {
    const sh = await shop();
    const r = await createReceipt(sh, 'flood-1');
    await aMinuteOld(sh, 'flood-1');
    await page('flood-1', r.search);
    const first = await waitFor(async () => (await row(sh, 'flood-1')).balancesCheckedAt ?? undefined, CHAIN_WAIT_MS, 'the first read');
    for (let i = 0; i < 20; i++) await page('flood-1', r.search);
    const after = await row(sh, 'flood-1');
    assert.equal(after.balancesCheckDue, null, 'no read asked for within the window');
    assert.equal(after.balancesCheckedAt, first);
  });

  test('a page load writes nothing: no UPDATE while a read is recent or pending, and one for many concurrent loads when one is due', async () => {
    const sh = await shop();
    const r = await createReceipt(sh, 'nowrite-1');
    await aMinuteOld(sh, 'nowrite-1');
    await page('nowrite-1', r.search);
    await until(async () => (await row(sh, 'nowrite-1')).balancesCheckedAt !== null, CHAIN_WAIT_MS, 'the first read');
    // The worker stands still, so every UPDATE of receipts counted below is the route's.
    await t.deps.chainWorker!.stop();
    const db = t.deps.database.db;
    try {
      await db.execute(sql`create table if not exists receipt_update_statements (n integer)`);
      await db.execute(sql`create or replace function count_receipt_updates() returns trigger language plpgsql as $$ begin insert into receipt_update_statements values (1); return null; end $$`);
      // Per statement: it fires for an UPDATE that matches no row too.
      await db.execute(sql`create trigger receipt_update_statements after update on receipts for each statement execute function count_receipt_updates()`);
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
      const statements = async () => Number(((await db.execute(sql`select count(*)::int as n from receipt_update_statements`)) as unknown as { rows: { n: number }[] }).rows[0]!.n);
      for (let i = 0; i < 20; i++) await page('nowrite-1', r.search);
      assert.equal(await statements(), 0, 'a read less than a minute old: the loads send no UPDATE at all');
      // A minute on: many loads at once ask once.
      await db.update(receipts).set({ balancesCheckedAt: Date.now() - PAGE_CHECK_EVERY_MS - 1 }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'nowrite-1')));
      const base = await statements();
      await Promise.all(Array.from({ length: 10 }, () => page('nowrite-1', r.search)));
      assert.equal(await statements() - base, 1, 'one conditional UPDATE for ten concurrent loads');
      assert.notEqual((await row(sh, 'nowrite-1')).balancesCheckDue, null, 'and the read is asked for');
      for (let i = 0; i < 5; i++) await page('nowrite-1', r.search);
      assert.equal(await statements() - base, 1, 'while it is pending, nothing more');
    } finally {
      await db.execute(sql`drop trigger if exists receipt_update_statements on receipts`);
      t.deps.chainWorker!.start();
    }
    await until(async () => (await row(sh, 'nowrite-1')).balancesCheckDue === null, CHAIN_WAIT_MS, 'the asked-for read');
  });

  test('another token sent: the hint of its transaction finds it by balance', async () => {
    const sh = await shop();
    const r = await createReceipt(sh, 'tok-1');
    assert.equal((await row(sh, 'tok-1')).balancesCheckDue, null, 'the page of a new receipt asked for no read');
    const hash = await wallet(2).writeContract({ address: otherToken, abi: erc20Abi, functionName: 'transfer', args: [r.payTo, 4_000_000n] });
    await pub().waitForTransactionReceipt({ hash });
    const hint = await t.call(null, 'POST', `/api/pay/tok-1/transaction${r.search}`, { transactionHash: hash });
    assert.equal(hint.status, 202, JSON.stringify(hint.body));
    const d = await wrongToken(sh, 'tok-1');
    assert.equal(d.amountPaid, '0');
    assert.deepEqual((await row(sh, 'tok-1')).otherMoney, { [otherToken.toLowerCase()]: '4000000' });
    // The chain worker sweeps it into the split by itself (src/payments/other-sweeps.ts): nothing waits for the merchant.
    const atSplit = () => pub().readContract({ address: otherToken, abi: erc20Abi, functionName: 'balanceOf', args: [sh.split] });
    await until(async () => (await atSplit()) === 4_000_000n, CHAIN_WAIT_MS, 'the token to reach the split');
    const offer = await admin(t, sh.s, 'GET', `/api/admin/receipts/tok-1/sweep?token=${otherToken}`);
    assert.equal(offer.body.waiting, '0');
  });

  test('1 wei of ETH at an order’s address never holds its stock: it expires on time, failed with wrong_token, stock back, the ETH still sweepable; its token paid late completes it', async () => {
    const sh = await shop();
    const inv = await t.call(sh.key, 'POST', '/api/inventory', { sku: 'vase', name: 'Vase', priceUsd: 4, stockQty: 3, taxable: false });
    assert.ok(inv.status < 300, JSON.stringify(inv.body));
    const stock = async () => (await t.call(sh.key, 'GET', '/api/inventory')).body.items.find((i: { sku: string }) => i.sku === 'vase').stockQty;
    const order = await t.call(sh.key, 'POST', '/api/orders', { items: [{ sku: 'vase', qty: 2 }] });
    assert.equal(order.status, 200, JSON.stringify(order.body));
    const id = order.body.receipt.receiptId as string;
    const search = new URL(order.body.receipt.paymentUrl).search;
    assert.equal(await stock(), 1, 'reserved');
    await waitFor(async () => ((await row(sh, id)).payAddress !== null ? true : undefined), CHAIN_WAIT_MS, `${id}'s address to be stored`);
    const payTo = (await page(id, search)).payment.payTo;
    await createReceipt(sh, 'exp-none');
    await t.deps.chainWorker!.stop();
    try {
      await send(5, { to: payTo, value: 1n });
      const past = Date.now() - 1;
      for (const r of [id, 'exp-none']) {
        await t.deps.database.db.update(receipts).set({ expiresAt: past }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, r)));
      }
    } finally {
      t.deps.chainWorker!.start();
    }
    // The read before expiry finds the wei; the receipt expires all the same and keeps wrong_token.
    await waitFor(async () => ((await row(sh, id)).status === 'failed' ? true : undefined), CHAIN_WAIT_MS, `${id} to expire`);
    const failed = await row(sh, id);
    assert.equal(failed.exception, 'wrong_token', 'the merchant still sees the other money');
    assert.equal(failed.paidUnits, '0');
    assert.notEqual(failed.expiredAt, null);
    assert.equal(await stock(), 3, 'the reserved stock returned');
    const expired = await t.deps.database.db.select({ payload: webhookEvents.payload }).from(webhookEvents).where(and(eq(webhookEvents.wallet, sh.wallet), eq(webhookEvents.type, 'receipt.expired')));
    const mine = expired.map((e) => (e.payload as { data: { receiptId: string; exception: string; status: string } }).data).filter((e) => e.receiptId === id);
    assert.deepEqual(mine.map((e) => [e.status, e.exception]), [['failed', 'wrong_token']]);
    await waitFor(async () => ((await row(sh, 'exp-none')).status === 'failed' ? true : undefined), CHAIN_WAIT_MS, 'exp-none to expire');
    assert.equal((await row(sh, 'exp-none')).exception, 'expired');

    // A settle after expiry (the page asks for another read) does not bounce it back.
    await t.deps.database.db.update(receipts).set({ balancesCheckedAt: Date.now() - PAGE_CHECK_EVERY_MS - 1 }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
    await page(id, search);
    await until(async () => (await row(sh, id)).balancesCheckDue === null, CHAIN_WAIT_MS, 'the read after expiry');
    const d = (await t.call(sh.key, 'GET', `/api/receipts/${id}`)).body as { status: string; exception: string | null };
    assert.deepEqual([d.status, d.exception], ['failed', 'wrong_token']);

    const offer = await admin(t, sh.s, 'GET', `/api/admin/receipts/${id}/sweep?token=eth`);
    assert.equal(offer.status, 200, JSON.stringify(offer.body));
    await send(4, { to: offer.body.transaction.to, data: offer.body.transaction.data });
    assert.equal(await pub().getBalance({ address: sh.split }), 1n, 'the wei reached the split');

    // Its own token arriving late still completes it, and takes the stock again.
    const due = BigInt(((await page(id, search)).payment as { due?: string }).due ?? '0');
    assert.equal(due, 8_000_000n, 'two vases, none of the token paid');
    const hash = await wallet(1).writeContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [payTo, due] });
    assert.equal((await pub().waitForTransactionReceipt({ hash })).status, 'success');
    const done = await waitFor(async () => {
      const r = (await t.call(sh.key, 'GET', `/api/receipts/${id}`)).body as { status: string; exception: string | null };
      return r.status === 'completed' ? r : undefined;
    }, CHAIN_WAIT_MS, `${id} to complete`);
    assert.equal(done.exception, 'paid_late');
    assert.equal(await stock(), 1, 'taken again');
  });
});
