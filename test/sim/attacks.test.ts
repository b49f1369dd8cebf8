/**
 * Strangers on the mainnet-shaped simulation (every provider behaviour on): what they put on the
 * chain must not stop or slow another merchant's payment (issue 23: a flood of 50,000 fake
 * Transfer logs delays it by at most 10 s). The delay is the payment's block → completed against
 * a payment of the same merchant just before, on the same chain; the bench reports the figures,
 * this test holds it to twice the bound so that a loaded machine does not fail it, and
 * checks what the stranger got: nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startSim, type Sim } from './helpers.ts';
import { detail, openReceipt, openShop, payAndTime as payAndTimeIn, startSimApp, type Shop, type SimApp } from './shop.ts';

const SETTLE_MS = 120_000;

let sim: Sim;
let app: SimApp;
let victim: Shop;
let baselineMs: number;
before(async () => {
  sim = await startSim();
  app = await startSimApp(sim);
  app.t.deps.startWorkers();
  victim = await openShop(sim, app.t);
  baselineMs = await payAndTime('baseline', 4.2);
});
after(async () => {
  await app?.close();
  await sim?.stop();
});

/** Pays a new receipt of the victim merchant: ms from its block to completed. */
const payAndTime = (id: string, usd: number) => payAndTimeIn(sim, app.t, victim, id, usd, SETTLE_MS);

describe('strangers', () => {
  test("50,000 fake Transfer logs, also into payment addresses, credit nothing and delay another merchant's payment by at most 2 x 10 s", async () => {
    const targeted = await openShop(sim, app.t);
    const receipts = await Promise.all(Array.from({ length: 20 }, (_, i) => openReceipt(app.t, targeted, `targeted-${i}`, 3)));
    const flooding = sim.flood(
      receipts.map((r) => r.payTo),
      50_000,
      5,
    );
    await sim.waitForBlock((await sim.node.head()) + 1n);
    const delayedMs = await payAndTime('during-flood', 4.3);
    await flooding;
    assert.ok(delayedMs - baselineMs <= 20_000, `block → completed ${delayedMs} ms during the flood, ${baselineMs} ms before`);
    for (const r of receipts) {
      const d = await detail(app.t, targeted, r.id);
      assert.equal(d.status, 'pending', `${r.id}: fake logs are no payment`);
      assert.equal(d.amountPaid, '0');
    }
  });
});
