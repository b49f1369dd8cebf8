/** Sweep fees (src/chain/fees.ts): the cap is never passed and every replacement is one nodes accept. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstFees, gwei, replacementFees } from '../../src/chain/fees.ts';

const G = 10n ** 9n;
const CAP = 50n * G;

test('a first send offers twice the base fee plus the tip, within the cap, or waits', () => {
  assert.deepEqual(firstFees(1n * G, G / 10n, CAP), { maxFeePerGas: 2n * G + G / 10n, maxPriorityFeePerGas: G / 10n });
  assert.deepEqual(firstFees(30n * G, 2n * G, CAP), { maxFeePerGas: CAP, maxPriorityFeePerGas: 2n * G }, 'capped, still above the base fee');
  assert.deepEqual(firstFees(49n * G, 2n * G, CAP), { maxFeePerGas: CAP, maxPriorityFeePerGas: 1n * G }, 'the tip shrinks to what fits under the cap');
  assert.equal(firstFees(CAP, 1n, CAP), null, 'a base fee at the cap: it waits');
});

test('a replacement raises both fees by at least 10 %, meets a spike in one step, and never passes the cap', () => {
  const sent = { maxFeePerGas: 11n * G / 10n, maxPriorityFeePerGas: 1n * G };
  const spike = replacementFees(sent, 10n * G, 1n * G, CAP)!;
  assert.ok(spike.maxFeePerGas >= 2n * 10n * G, 'twice the spiked base fee');
  assert.ok(spike.maxPriorityFeePerGas * 10n >= sent.maxPriorityFeePerGas * 11n);
  const calm = replacementFees(sent, 1n, 1n, CAP)!;
  assert.ok(calm.maxFeePerGas * 10n >= sent.maxFeePerGas * 11n, 'raised even when the base fee fell');
  assert.ok(calm.maxPriorityFeePerGas * 10n >= sent.maxPriorityFeePerGas * 11n);
  for (let fee = 1n * G, i = 0; i < 40; i++) {
    const next = replacementFees({ maxFeePerGas: fee, maxPriorityFeePerGas: fee / 2n }, 100n * G, 1n * G, CAP);
    if (next === null) {
      assert.ok(fee * 1125n / 1000n > CAP, 'it stops only when the raise would pass the cap');
      break;
    }
    assert.ok(next.maxFeePerGas <= CAP);
    assert.ok(next.maxPriorityFeePerGas <= next.maxFeePerGas);
    fee = next.maxFeePerGas;
  }
  assert.equal(replacementFees({ maxFeePerGas: CAP, maxPriorityFeePerGas: G }, 100n * G, G, CAP), null);
});

test('gwei for messages', () => {
  assert.equal(gwei(50n * G), '50');
  assert.equal(gwei(12_500_000_000n), '12.5');
  assert.equal(gwei(1n), '0.000000001');
});
