/**
 * The service's own gas on the mainnet-shaped simulation, every provider behaviour on (issue 23,
 * "Done when"): with the deployer out of ETH, receipts still settle as far as they can and expire
 * on time, and /healthz says sweeps wait for gas; funded again, everything completes. And native
 * ETH sent to a payment address (which the receipt never counts as its money) reaches the split
 * without the merchant doing anything. The same rules are driven pass by pass on the dev chain in
 * test/chain/sweeps.test.ts and test/chain/other-sweeps.test.ts; here the worker runs on its own,
 * against lagging nodes, 503s, the rate limit and full blocks.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { parseEther, type Address } from 'viem';
import { NATIVE_TOKEN } from '../../src/chain/payment-address.ts';
import { PAGE_CHECK_EVERY_MS } from '../../src/payments/other-money.ts';
import { receipts, sweeps } from '../../src/db/schema.ts';
import { admin, newAccount, signIn } from '../helpers/session.ts';
import { waitFor } from '../helpers/wait.ts';
import type { Sim } from './helpers.ts';
import { detail, openReceipt, openShop, pay, reaches, tokenBalance, useSimApp, type SimApp } from './shop.ts';

const SETTLE_MS = 120_000;
/** An order expires within a few worker passes (a block time each) of falling due, gas or none. */
const EXPIRY_SLACK_MS = 15_000;
const monitor = newAccount();

let sim: Sim;
let app: SimApp;
useSimApp((started) => ({ sim, app } = started), { SUPERADMIN_WALLETS: monitor.address });

const deployer = (): Address => app.chain.walletClient!.account.address;
const ethAt = (address: Address) => sim.publicClient.getBalance({ address });
const setEth = (address: Address, wei: bigint) => sim.node.rpc('anvil_setBalance', [address, `0x${wei.toString(16)}`]);

async function health() {
  const res = await admin(app.t, await signIn(app.t, monitor), 'GET', '/healthz');
  return res.body as { status: string; reasons: string[]; payments: { sweepsWaitingForGas: number; deployerLow: boolean } };
}

describe('the service’s gas', () => {
  test('ETH at a payment address reaches the split, with no merchant action; the receipt still waits for its token', async () => {
    const shop = await openShop(sim, app.t);
    const r = await openReceipt(app.t, shop, 'eth-at-address', 2);
    const hash = await sim.wallet(4).sendTransaction({ to: r.payTo, value: parseEther('0.05') });
    assert.equal((await sim.publicClient.waitForTransactionReceipt({ hash })).status, 'success');
    // The buyer's page, still open a minute after the receipt was made, loading again is what
    // makes the worker look at the address's balances (the test stands in for the minute).
    await app.t.deps.database.db.update(receipts).set({ createdAt: Date.now() - PAGE_CHECK_EVERY_MS - 1 }).where(and(eq(receipts.wallet, shop.wallet), eq(receipts.id, r.id)));
    assert.equal((await app.t.call(null, 'GET', r.page)).status, 200);
    await waitFor(async () => ((await ethAt(shop.split)) === parseEther('0.05') ? true : undefined), SETTLE_MS, 'the ETH to reach the split', 250);
    assert.equal(await ethAt(r.payTo), 0n, 'nothing is left at the address');
    const rows = await app.t.deps.database.db.select().from(sweeps).where(eq(sweeps.payAddress, r.payTo.toLowerCase()));
    assert.deepEqual(
      rows.filter((s) => s.state !== 'lost').map((s) => [s.token, s.amountUnits]),
      [[NATIVE_TOKEN, parseEther('0.05').toString()]],
      'one sweep, of ETH, for the balance read before it',
    );
    const d = await detail(app.t, shop, r.id);
    assert.deepEqual([d.status, d.exception, d.amountPaid], ['pending', 'wrong_token', '0'], 'ETH is never the receipt’s money');
  });

  test('the deployer out of ETH: a paid receipt settles as far as it can, an order expires on time with its stock back, /healthz says sweeps wait for gas; funded, it completes', async () => {
    const paid = await openShop(sim, app.t);
    const selling = await openShop(sim, app.t);
    const stock = await app.t.call(selling.key, 'POST', '/api/inventory', { sku: 'lamp', name: 'Lamp', priceUsd: 9, stockQty: 2, taxable: false });
    assert.ok(stock.status < 300, JSON.stringify(stock.body));
    const order = await app.t.call(selling.key, 'POST', '/api/orders', { items: [{ sku: 'lamp', qty: 2 }] });
    assert.equal(order.status, 200, JSON.stringify(order.body));
    const orderId = order.body.receipt.receiptId as string;
    const r = await openReceipt(app.t, paid, 'no-gas', 3);
    const splitBefore = await tokenBalance(sim, paid.split);
    const funds = await ethAt(deployer());
    await setEth(deployer(), 0n);
    try {
      await pay(sim, 5, r.payTo, r.amount);
      // The order falls due while no sweep can be paid: the worker expires it all the same.
      const due = Date.now() + 2_000;
      await app.t.deps.database.db
        .update(receipts)
        .set({ expiresAt: due })
        .where(and(eq(receipts.wallet, selling.wallet.toLowerCase()), eq(receipts.id, orderId)));
      const expired = await reaches(app.t, selling, orderId, 'failed', SETTLE_MS, 'expired');
      assert.ok(expired.seenAt - due <= EXPIRY_SLACK_MS, `expired ${expired.seenAt - due} ms after it fell due`);
      const left = (await app.t.call(selling.key, 'GET', '/api/inventory')).body.items.find((i: { sku: string }) => i.sku === 'lamp').stockQty;
      assert.equal(left, 2, 'the reserved stock is back');
      // The payment is seen and confirmed; only its sweep waits.
      await reaches(app.t, paid, r.id, 'tx_mined', SETTLE_MS);
      const waiting = await waitFor(async () => {
        const h = await health();
        // The deployer's balance is read every 30 s at most (its cost, test/sim/cost.test.ts).
        return h.payments.sweepsWaitingForGas >= 1 && h.payments.deployerLow ? h : undefined;
      }, SETTLE_MS, '/healthz to say a sweep waits for gas and the deployer is low', 250);
      assert.equal(waiting.status, 'degraded', 'unpaid sweeps make the service degraded');
      assert.ok(waiting.reasons.includes('sweeps_unpaid'), JSON.stringify(waiting));
      assert.equal((await detail(app.t, paid, r.id)).status, 'tx_mined', 'not completed: the money is still at its address');
      assert.equal(await tokenBalance(sim, r.payTo), r.amount);
      const sent = await app.t.deps.database.db.select().from(sweeps).where(eq(sweeps.payAddress, r.payTo.toLowerCase()));
      assert.deepEqual(sent, [], 'nothing was sent that could not be paid');
    } finally {
      await setEth(deployer(), funds > parseEther('1') ? funds : parseEther('100'));
    }
    await reaches(app.t, paid, r.id, 'completed', SETTLE_MS);
    assert.equal((await tokenBalance(sim, paid.split)) - splitBefore, r.amount, 'the split received exactly what was paid');
    assert.equal(await tokenBalance(sim, r.payTo), 0n);
    await waitFor(async () => ((await health()).payments.sweepsWaitingForGas === 0 ? true : undefined), SETTLE_MS, '/healthz to clear', 250);
  });
});
