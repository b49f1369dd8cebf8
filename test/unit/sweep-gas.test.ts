import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ESTIMATE_EVERY_MS, SweepGasLimits } from '../../src/payments/sweep-gas.ts';

const FACTORY = '0x00000000000000000000000000000000000000fa';
const USDC = '0x00000000000000000000000000000000000000c0';
const fresh = { target: FACTORY, token: USDC, deploys: true };
const deployed = { target: FACTORY, token: USDC, deploys: false };

test('a kind is estimated once, with a 30 % margin, until its limit is old', async () => {
  let now = 0;
  const limits = new SweepGasLimits(() => now);
  let asked = 0;
  const estimate = (gas: bigint) => async () => {
    asked++;
    return gas;
  };
  assert.equal(await limits.limit(fresh, estimate(100_000n)), 130_000n);
  assert.equal(await limits.limit(fresh, estimate(999_999n)), 130_000n, 'not asked again');
  assert.equal(asked, 1);
  assert.equal(await limits.limit(deployed, estimate(40_000n)), 52_000n, 'another kind, another estimate');
  now = ESTIMATE_EVERY_MS;
  assert.equal(await limits.limit(fresh, estimate(80_000n)), 130_000n, 'estimated again, never lowered');
  now = 2 * ESTIMATE_EVERY_MS;
  assert.equal(await limits.limit(fresh, estimate(120_000n)), 156_000n, 'raised when the token grew dearer');
  assert.equal(asked, 4);
  assert.equal(limits.estimates, 4);
});

test('a reverted sweep drops both kinds of its factory and token, and only those', async () => {
  const limits = new SweepGasLimits(() => 0);
  const other = { target: FACTORY, token: '0x00000000000000000000000000000000000000e7', deploys: true };
  await limits.limit(fresh, async () => 100_000n);
  await limits.limit(deployed, async () => 40_000n);
  await limits.limit(other, async () => 90_000n);
  limits.forget(FACTORY.toUpperCase().replace('0X', '0x'), USDC);
  assert.equal(await limits.limit(fresh, async () => 50_000n), 65_000n, 'estimated afresh: the old limit is not kept');
  assert.equal(await limits.limit(deployed, async () => 30_000n), 39_000n);
  assert.equal(await limits.limit(other, async () => 1n), 117_000n, "another token's limit stays");
});
