/**
 * A fresh start on a chain with history (issue 23, "Done when": a fresh start after 2 hours of
 * history completes its first payment within 30 s). Before, the scanner asked for every log of
 * that history at once, met Infura's 10,000-result refusal and retried the range for ever. Now an
 * empty cursor starts 10 minutes before the oldest receipt that waits for money, and refusals
 * split the range. History older than those 10 minutes is never read, so 12 minutes of it (360
 * blocks of 600 logs each) make the same start as 2 hours, whose 3,600 blocks take the simulation
 * over 10 minutes to mine. The receipt is created and paid while no worker runs, as after a
 * deployment or a restore; the workers then start with every provider behaviour on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startSim, type Sim } from './helpers.ts';
import { openReceipt, openShop, pay, reaches, startSimApp, type SimApp } from './shop.ts';

/** Twelve minutes of 2-second blocks: more than the 10 minutes an empty cursor looks back. */
const HISTORY_BLOCKS = 360;
const FIRST_PAYMENT_MS = 30_000;

let sim: Sim;
let app: SimApp;
before(async () => {
  sim = await startSim({ historyBlocks: HISTORY_BLOCKS });
  app = await startSimApp(sim);
});
after(async () => {
  await app?.close();
  await sim?.stop();
});

describe('a fresh start on a chain with history', () => {
  test('completes its first payment within 30 s of the workers starting', async (t) => {
    const shop = await openShop(sim, app.t);
    const r = await openReceipt(app.t, shop, 'first', 3.3);
    await pay(sim, 0, r.payTo, r.amount);
    const started = Date.now();
    app.t.deps.startWorkers();
    const done = await reaches(app.t, shop, 'first', 'completed', 120_000);
    const ms = done.seenAt - started;
    t.diagnostic(`completed ${ms} ms after the workers started (bound ${FIRST_PAYMENT_MS} ms); ${sim.proxy.stats().getLogsRefused.results} eth_getLogs answers refused for their size`);
    assert.equal(done.amountPaid, r.amount.toString());
    assert.ok(ms <= FIRST_PAYMENT_MS, `completed ${ms} ms after the workers started`);
  });
});
