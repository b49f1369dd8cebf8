/**
 * A 200-fold base-fee spike for 90 s on the mainnet-shaped simulation, every provider behaviour on
 * (issue 23, "Done when": no duplicate or empty sweep). Before, the worker sent a second sweep
 * with the next nonce after 60 s instead of replacing the stuck one, and a receipt took 126 s. A
 * payment lands just before the spike, two more during it. Each must complete with one sweep row
 * (replacements are attempts of it), the split receiving exactly what was paid, and no two sweeps
 * of the deployer sharing a nonce. A sweep signed at the fee before the spike is refused by the
 * node here, or mined first; the replacement of one stuck in a pool is proved on the dev chain
 * (test/chain/sweeps.test.ts), and the output says how many were replaced.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eq, inArray } from 'drizzle-orm';
import { sweeps } from '../../src/db/schema.ts';
import type { Sim } from './helpers.ts';
import { openReceipt, openShop, pay, reaches, useSimApp, tokenBalance, type SimApp } from './shop.ts';

const SPIKE_FACTOR = 200;
const SPIKE_MS = 90_000;
const SETTLE_MS = 240_000;

let sim: Sim;
let app: SimApp;
useSimApp((started) => ({ sim, app } = started));

describe('a base-fee spike', () => {
  test(`${SPIKE_FACTOR}-fold for ${SPIKE_MS / 1000} s: every payment completes with one sweep, none empty, no nonce used twice`, async (t) => {
    const shop = await openShop(sim, app.t);
    const splitBefore = await tokenBalance(sim, shop.split);
    const receipts = [await openReceipt(app.t, shop, 'before-spike', 2.1), await openReceipt(app.t, shop, 'early-in-spike', 3.2), await openReceipt(app.t, shop, 'late-in-spike', 4.3)];

    await pay(sim, 0, receipts[0]!.payTo, receipts[0]!.amount);
    // Its sweep is sent about now, at the fee before the spike.
    await reaches(app.t, shop, 'before-spike', 'tx_mined', SETTLE_MS);
    const spikeAt = Date.now();
    sim.spikeBaseFee(SPIKE_FACTOR, SPIKE_MS);
    await pay(sim, 1, receipts[1]!.payTo, receipts[1]!.amount);
    await new Promise((r) => setTimeout(r, 30_000)); // Pacing: the third payment lands well into the spike.
    await pay(sim, 2, receipts[2]!.payTo, receipts[2]!.amount);

    for (const r of receipts) {
      const done = await reaches(app.t, shop, r.id, 'completed', SETTLE_MS);
      const completedAt = (done.statusHistory as { status: string; at: number }[]).find((h) => h.status === 'completed')!.at;
      t.diagnostic(`${r.id} completed ${completedAt - spikeAt} ms after the spike began`);
      assert.equal(done.amountPaid, r.amount.toString(), r.id);
      assert.equal(await tokenBalance(sim, r.payTo), 0n, `${r.id}: its address swept`);
    }
    const rows = await app.t.deps.database.db
      .select()
      .from(sweeps)
      .where(inArray(sweeps.payAddress, receipts.map((r) => r.payTo.toLowerCase())));
    for (const r of receipts) {
      const own = rows.filter((x) => x.payAddress === r.payTo.toLowerCase() && x.state !== 'lost');
      assert.equal(own.length, 1, `${r.id}: one sweep (replacements are attempts of it): ${JSON.stringify(own.map((x) => ({ state: x.state, attempts: x.attempts.length })))}`);
      assert.equal(own[0]!.state, 'mined', r.id);
    }
    const replaced = rows.filter((x) => x.attempts.length > 1).length;
    t.diagnostic(`${replaced} of ${rows.length} sweeps replaced with a higher fee`);
    // No empty sweep: the split received exactly what was paid, each address swept once.
    assert.equal((await tokenBalance(sim, shop.split)) - splitBefore, receipts.reduce((s, r) => s + r.amount, 0n));
    const deployerSweeps = await app.t.deps.database.db.select({ nonce: sweeps.nonce, state: sweeps.state }).from(sweeps).where(eq(sweeps.account, rows[0]!.account));
    const minedNonces = deployerSweeps.filter((x) => x.state === 'mined').map((x) => x.nonce.toString());
    assert.equal(new Set(minedNonces).size, minedNonces.length, 'no nonce mined twice');
  });
});
