/**
 * The provider's rate budget (src/chain/rpc-budget.ts) on a clock the test moves: spare work keeps
 * to the upper half of the bucket, stops for a while after a 429, and reads as a rate limit; other
 * work takes the rest and waits for the bucket to refill instead of meeting the provider's limit.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isRateLimited } from '../../src/chain/lagging-nodes.ts';
import { HOLD_MS, isHeldBack, RpcBudget, SpareHeldBack } from '../../src/chain/rpc-budget.ts';

function clocked(perSecond: number | null) {
  let now = 1_000_000;
  const budget = new RpcBudget(perSecond, () => now);
  return { budget, move: (ms: number) => (now += ms) };
}

/** How many spare calls the budget lets go now, up to `most`. */
function spareCalls(budget: RpcBudget, most = 100): Promise<number> {
  return budget.spare(async () => {
    let n = 0;
    try {
      for (; n < most; n++) budget.takeSpare();
    } catch (err) {
      if (!(err instanceof SpareHeldBack)) throw err;
    }
    return n;
  });
}

describe('the rate budget', () => {
  test('spare work takes the upper half of the bucket and no more; other work takes the rest at once', async () => {
    const { budget } = clocked(10);
    assert.equal(await spareCalls(budget), 5);
    assert.equal(budget.counts.heldBack, 1);
    const started = Date.now();
    for (let i = 0; i < 5; i++) await budget.beforeRequest();
    assert.ok(Date.now() - started < 50, 'the other half went without waiting');
  });

  test('the bucket refills with time, and spare work goes again once it is above half', async () => {
    const { budget, move } = clocked(10);
    await spareCalls(budget);
    for (let i = 0; i < 5; i++) await budget.beforeRequest();
    move(500);
    assert.equal(await spareCalls(budget), 0, 'half a second refills five: the other work’s half, not yet spare room');
    move(500);
    assert.equal(await spareCalls(budget), 5, 'a full second: the bucket holds ten again, five of them above half');
  });

  test('other work on an empty bucket waits for it to refill (real time), rather than meet the provider’s limit', async () => {
    const budget = new RpcBudget(20);
    for (let i = 0; i < 20; i++) await budget.beforeRequest();
    const started = Date.now();
    await budget.beforeRequest();
    const waited = Date.now() - started;
    assert.ok(waited >= 40, `waited ${waited} ms for one call's worth (50 ms at 20 a second)`);
  });

  test(`a 429 holds spare work for ${HOLD_MS} ms, even with no limit configured, and spare work never waits`, async () => {
    const { budget, move } = clocked(null);
    assert.equal(await spareCalls(budget, 3), 3, 'no limit known: spare work goes');
    budget.afterResponse(200);
    assert.equal(await spareCalls(budget, 3), 3);
    budget.afterResponse(429);
    assert.equal(budget.counts.limited, 1);
    assert.equal(await spareCalls(budget, 3), 0);
    move(HOLD_MS - 1);
    assert.equal(await spareCalls(budget, 3), 0);
    move(1);
    assert.equal(await spareCalls(budget, 3), 3);
    // Other work is never held by it.
    await budget.beforeRequest();
  });

  test('a held-back call reads as a rate limit, and only work run through spare() is spare', async () => {
    const { budget } = clocked(null);
    budget.afterResponse(429);
    assert.equal(budget.isSpare(), false);
    await budget.spare(async () => {
      assert.equal(budget.isSpare(), true);
      await Promise.resolve();
      assert.equal(budget.isSpare(), true, 'across awaits');
      assert.throws(
        () => budget.takeSpare(),
        (err) => err instanceof SpareHeldBack && isRateLimited(err),
      );
      assert.equal(isHeldBack(new Error('a read failed', { cause: new SpareHeldBack() })), true, 'found among the causes viem wraps it in');
      assert.equal(isHeldBack(Object.assign(new Error('rate limited'), { status: 429 })), false, 'the provider’s own 429 is not held back');
    });
  });
});
