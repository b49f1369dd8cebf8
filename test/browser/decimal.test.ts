/** The admin app's exact conversions between typed text and API numbers. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  bpsToPercent,
  centsToUsd,
  formatCents,
  fractionToPercent,
  parseFeePercent,
  parseUsd,
  percentToBps,
  percentToFraction,
  plainDecimal,
  shiftDecimal,
  usdToCents,
} from '../../web/src/lib/decimal.ts';

describe('admin app decimal conversions', () => {
  test('shiftDecimal moves the point without float arithmetic', () => {
    assert.equal(shiftDecimal('7.25', -2), '0.0725');
    assert.equal(shiftDecimal('0.0725', 2), '7.25');
    assert.equal(shiftDecimal('100', -2), '1');
    assert.equal(shiftDecimal('0.1', 2), '10');
    assert.equal(shiftDecimal('12', 2), '1200');
    assert.equal(shiftDecimal('-0.5', 1), '-5');
    assert.equal(plainDecimal(1e-7), '0.0000001');
  });

  test('tax percent ↔ fraction is exact where floats are not', () => {
    assert.notEqual(1.1 / 100, 0.011, 'the float way is wrong');
    assert.notEqual(0.0725 * 100, 7.25, 'both ways');
    assert.equal(percentToFraction('1.1'), 0.011);
    assert.equal(percentToFraction('7.25'), 0.0725);
    assert.equal(percentToFraction('8.875'), 0.08875);
    assert.equal(percentToFraction('0.0001'), 0.000001);
    assert.equal(percentToFraction('100'), 1);
    for (const bad of ['', '101', '7.12345', '-1', '7,25', 'abc', '1e2']) assert.equal(percentToFraction(bad), null, bad);
    assert.equal(fractionToPercent(0.0725), '7.25');
    assert.equal(fractionToPercent(0.000001), '0.0001');
    assert.equal(fractionToPercent(0), '0');
    for (let i = 0; i <= 10000; i += 7) {
      const text = bpsToPercent(i);
      assert.equal(fractionToPercent(percentToFraction(text)!), shiftDecimal(text, 0));
    }
  });

  test('split percent ↔ basis points', () => {
    assert.equal(percentToBps('99.50'), 9950);
    assert.equal(percentToBps('99.5'), 9950);
    assert.equal(percentToBps('0.5'), 50);
    assert.equal(percentToBps('100'), 10000);
    for (const bad of ['100.01', '0.555', '', 'x', '-1']) assert.equal(percentToBps(bad), null, bad);
    assert.equal(bpsToPercent(9950), '99.50');
    assert.equal(bpsToPercent(5), '0.05');
    assert.equal(bpsToPercent(10000), '100.00');
    assert.equal(parseFeePercent('2.5'), 2.5);
    assert.equal(parseFeePercent('2.555'), null);
  });

  test('dollars ↔ cents', () => {
    assert.equal(parseUsd('12.3'), 1230);
    assert.equal(parseUsd('$1,234.56'), 123456);
    assert.equal(parseUsd('0.29'), 29);
    for (const bad of ['1.234', '-1', '', 'ten']) assert.equal(parseUsd(bad), null, bad);
    assert.equal(usdToCents(0.29), 29);
    assert.equal(usdToCents(21.65), 2165);
    assert.equal(usdToCents(1e21 / 1e21), 100);
    assert.throws(() => usdToCents(0.1 + 0.2));
    assert.equal(centsToUsd(2165), 21.65);
    assert.equal(centsToUsd(5), 0.05);
    assert.equal(formatCents(123456), '$1,234.56');
    assert.equal(formatCents(-5), '-$0.05');
  });
});
