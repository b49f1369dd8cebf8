/**
 * Payments on the mainnet-shaped simulation with every provider behaviour on (DESIGN.md "A real
 * chain", issue 23): 550 foreign Transfer logs and 50 token transfers in every 2-second block,
 * eth_getLogs refused over 10,000 logs or 2,000 blocks, 50-150 ms latency, 25 requests/s, a node
 * 1-3 blocks behind on 30% of answers, 1% 503s, CONFIRMATIONS=3. A dozen payments to two
 * merchants, two of the same amount in the same block and one paid in two parts: each receipt
 * completes with exactly its own transfers, and every unit reaches its merchant's split.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import type { Address } from 'viem';
import { receiptTransfers, sweeps } from '../../src/db/schema.ts';
import type { Sim } from './helpers.ts';
import { detail, openReceipt, openShop, pay, reaches, useSimApp, tokenBalance, type OpenReceipt, type Shop, type SimApp } from './shop.ts';

/** Generous: a payment needs its block, 3 confirmations, a sweep and 3 more, through a lagging, limited provider. */
const SETTLE_MS = 150_000;

let sim: Sim;
let app: SimApp;
useSimApp((started) => ({ sim, app } = started));

async function transfersOf(shop: Shop, id: string) {
  const rows = await app.t.deps.database.db
    .select()
    .from(receiptTransfers)
    .where(and(eq(receiptTransfers.wallet, shop.wallet), eq(receiptTransfers.receiptId, id)));
  return { in: rows.filter((r) => r.kind === 'in'), sweeps: rows.filter((r) => r.kind === 'sweep') };
}

describe('with every provider behaviour on', () => {
  test('a dozen payments, two of them equal and one paid in two parts, each complete with exactly their own transfers', async () => {
    const { t } = app;
    const a = await openShop(sim, t);
    const b = await openShop(sim, t);
    const splitBefore = new Map<Address, bigint>([
      [a.split, await tokenBalance(sim, a.split)],
      [b.split, await tokenBalance(sim, b.split)],
    ]);
    const plan: { shop: Shop; id: string; usd: number }[] = [
      ...[1.01, 2.02, 3.03, 4.04, 5.05].map((usd, i) => ({ shop: a, id: `a-${i}`, usd })),
      ...[6.06, 7.07, 8.08].map((usd, i) => ({ shop: b, id: `b-${i}`, usd })),
      // The same amount twice, paid in the same block by two buyers: told apart by their addresses.
      { shop: a, id: 'equal-1', usd: 9.99 },
      { shop: b, id: 'equal-2', usd: 9.99 },
      { shop: a, id: 'equal-3', usd: 9.99 },
    ];
    const receipts: (OpenReceipt & { shop: Shop })[] = [];
    for (const p of plan) receipts.push({ ...(await openReceipt(t, p.shop, p.id, p.usd)), shop: p.shop });
    const partial = { ...(await openReceipt(t, b, 'partial', 12.5)), shop: b };

    // Nine buyers pay at once (most land in the same block), then the first half of the partial one.
    const paid = new Map<string, string[]>();
    await Promise.all(
      Array.from({ length: 9 }, async (_, buyer) => {
        // One buyer's payments one after the other, as a wallet sends them.
        for (const [i, r] of receipts.entries()) {
          if (i % 9 !== buyer) continue;
          const { hash } = await pay(sim, buyer, r.payTo, r.amount);
          paid.set(r.id, [hash]);
        }
      }),
    );
    const half = partial.amount / 2n;
    const first = await pay(sim, 0, partial.payTo, half);
    paid.set(partial.id, [first.hash]);
    const underpaid = await reaches(t, b, partial.id, 'tx_mismatch', SETTLE_MS, 'underpaid');
    assert.equal(underpaid.amountPaid, half.toString());
    const topUp = await pay(sim, 1, partial.payTo, partial.amount - half);
    paid.get(partial.id)!.push(topUp.hash);

    for (const receipt of [partial, ...receipts]) {
      const done = await reaches(t, receipt.shop, receipt.id, 'completed', SETTLE_MS).catch(async (err: unknown) => {
        const rows = await app.t.deps.database.db.select().from(sweeps).where(eq(sweeps.payAddress, receipt.payTo.toLowerCase()));
        const transfers = await transfersOf(receipt.shop, receipt.id);
        throw new Error(`${(err as Error).message}; at the address ${await tokenBalance(sim, receipt.payTo)}; sweeps ${JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}; transfers ${JSON.stringify(transfers, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`);
      });
      assert.equal(done.exception, null, `${receipt.id}: ${done.exception}`);
      assert.equal(done.amountPaid, receipt.amount.toString(), receipt.id);
      assert.ok(paid.get(receipt.id)!.includes(done.transactionHash), `${receipt.id}: its transaction is one of its own transfers`);
      const transfers = await transfersOf(receipt.shop, receipt.id);
      assert.deepEqual(transfers.in.map((x) => x.transactionHash).sort(), [...paid.get(receipt.id)!].sort(), `${receipt.id}: exactly its own transfers`);
      assert.equal(await tokenBalance(sim, receipt.payTo), 0n, `${receipt.id}: swept`);
      assert.ok(transfers.sweeps.length >= 1, `${receipt.id}: a sweep recorded`);
      assert.equal(transfers.sweeps.reduce((s, x) => s + BigInt(x.amountUnits), 0n), receipt.amount, `${receipt.id}: swept in full, no empty sweep`);
    }
    const owed = (shop: Shop) => [...receipts, partial].filter((x) => x.shop === shop).reduce((s, x) => s + x.amount, 0n);
    assert.equal((await tokenBalance(sim, a.split)) - splitBefore.get(a.split)!, owed(a));
    assert.equal((await tokenBalance(sim, b.split)) - splitBefore.get(b.split)!, owed(b));
    for (const [i, receipt] of receipts.entries()) {
      const d = await detail(t, receipt.shop, receipt.id);
      assert.equal(d.payer?.toLowerCase(), sim.wallet(i % 9).account.address.toLowerCase(), `${receipt.id}: paid by its own buyer`);
    }
  });
});
