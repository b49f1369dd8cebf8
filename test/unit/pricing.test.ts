import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { AppError, InvalidInput } from '../../src/lib/errors.ts';
import {
  bpsOf,
  centsToUsd,
  divRoundHalfUp,
  pctToBps,
  rateToPpm,
  splitByBps,
  taxCents,
  usdToCents,
} from '../../src/lib/money.ts';
import { mergeLines, priceOrder, resolveTax, type PricedItem } from '../../src/domain/pricing.ts';

const item = (sku: string, priceCents: bigint, taxable = true): PricedItem => ({ sku, name: sku.toUpperCase(), priceCents, taxable });
const noTax = { ratePpm: 0n, jurisdictionCode: null };

function assertInvalid(fn: () => unknown, code = 'invalid_input'): void {
  assert.throws(fn, (err: unknown) => err instanceof AppError && err.status === 400 && err.code === code);
}

describe('money', () => {
  test('divRoundHalfUp rounds halves away from zero and everything else to nearest', () => {
    assert.equal(divRoundHalfUp(5n, 2n), 3n);
    assert.equal(divRoundHalfUp(-5n, 2n), -3n);
    assert.equal(divRoundHalfUp(4n, 3n), 1n);
    assert.equal(divRoundHalfUp(5n, 3n), 2n);
    assert.equal(divRoundHalfUp(0n, 7n), 0n);
    assert.throws(() => divRoundHalfUp(1n, 0n), RangeError);
  });

  test('taxCents rounds half up at the exact half cent', () => {
    assert.equal(taxCents(200n, 82_500n), 17n); // 16.5
    assert.equal(taxCents(199n, 82_500n), 16n); // 16.4175
    assert.equal(taxCents(1999n, 95_000n), 190n); // 189.905
    assert.equal(taxCents(1n, 500_000n), 1n); // 0.5
    assert.equal(taxCents(1n, 499_999n), 0n);
    assert.equal(taxCents(12345n, 0n), 0n);
  });

  test('bpsOf rounds half up', () => {
    assert.equal(bpsOf(4689n, 250), 117n); // 117.225
    assert.equal(bpsOf(2n, 2500), 1n); // 0.5
    assert.equal(bpsOf(1n, 4999), 0n);
    assert.equal(bpsOf(10_000n, 10_000), 10_000n);
    assert.equal(bpsOf(123n, 0n), 0n);
  });

  test('usdToCents takes at most two decimals and refuses float noise', () => {
    assert.equal(usdToCents(19.99), 1999n);
    assert.equal(usdToCents(0), 0n);
    assert.equal(usdToCents(0.1), 10n);
    assert.equal(usdToCents(1e6), 100_000_000n);
    assertInvalid(() => usdToCents(0.1 + 0.2));
    assertInvalid(() => usdToCents(1.005));
    assertInvalid(() => usdToCents(-0.01));
    assertInvalid(() => usdToCents(Number.NaN));
    assertInvalid(() => usdToCents(Number.POSITIVE_INFINITY));
    assertInvalid(() => usdToCents(1e-7));
    assert.equal(centsToUsd(usdToCents(12.3)), 12.3);
  });

  test('centsToUsd gives the number its decimal text names, on both sides of 2^53 cents', () => {
    const decimal = (c: bigint) => {
      const abs = c < 0n ? -c : c;
      return Number(`${c < 0n ? '-' : ''}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`);
    };
    const samples = [0n, 1n, 5n, 10n, 99n, 101n, 1275n, 1_000_005n, -1n, -1275n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 7n, 10n ** 17n + 3n];
    // A fixed pseudo-random walk over the whole safe range, so a failure is reproducible.
    let x = 0x2545f4914f6cdd1dn;
    for (let i = 0; i < 20_000; i++) {
      x = (x * 6364136223846793005n + 1442695040888963407n) & (2n ** 64n - 1n);
      samples.push((x >> 11n) % (2n ** 53n), (x >> 40n) % 1_000_000n);
    }
    for (const c of samples) assert.equal(centsToUsd(c), decimal(c), `${c} cents`);
  });

  test('rateToPpm takes a fraction from 0 to 1 with at most six decimals', () => {
    assert.equal(rateToPpm(0.0825), 82_500n);
    assert.equal(rateToPpm(0.095), 95_000n);
    assert.equal(rateToPpm(0.000001), 1n);
    assert.equal(rateToPpm(1), 1_000_000n);
    assert.equal(rateToPpm(0), 0n);
    assertInvalid(() => rateToPpm(0.1234567));
    assertInvalid(() => rateToPpm(1.5));
    assertInvalid(() => rateToPpm(-0.01));
    assertInvalid(() => rateToPpm(8.25));
  });

  test('pctToBps takes a percentage from 0 to 100 with at most two decimals', () => {
    assert.equal(pctToBps(2.5), 250);
    assert.equal(pctToBps(0.01), 1);
    assert.equal(pctToBps(2.99), 299);
    assert.equal(pctToBps(100), 10_000);
    assert.equal(pctToBps(0), 0);
    assertInvalid(() => pctToBps(2.555));
    assertInvalid(() => pctToBps(100.01));
    assertInvalid(() => pctToBps(-1));
  });

  test('splitByBps parts always add up exactly to the whole', () => {
    assert.deepEqual(splitByBps(100n, [3333, 3333, 3334]), [33n, 33n, 34n]);
    assert.deepEqual(splitByBps(1n, [5000, 5000]), [1n, 0n]);
    assert.deepEqual(splitByBps(10_000n, [9950, 50]), [9950n, 50n]);
    assert.throws(() => splitByBps(100n, [5000, 4999]), RangeError);
    const shares = fc
      .array(fc.integer({ min: 1, max: 10_000 }), { minLength: 1, maxLength: 12 })
      .filter((xs) => xs.reduce((a, b) => a + b, 0) <= 10_000)
      .map((xs) => {
        const rest = 10_000 - xs.reduce((a, b) => a + b, 0);
        return rest > 0 ? [...xs, rest] : xs;
      });
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), shares, (amount, bps) => {
        const parts = splitByBps(amount, bps);
        assert.equal(parts.reduce((a, b) => a + b, 0n), amount);
        parts.forEach((p, i) => {
          const exactFloor = (amount * BigInt(bps[i]!)) / 10_000n;
          assert.ok(p === exactFloor || p === exactFloor + 1n, 'each part is within one unit of its exact share');
        });
      }),
    );
  });
});

describe('resolveTax', () => {
  const table = [{ code: 'CA-LA', ratePpm: 95_000, components: ['state', 'county'] }];

  test('an explicit taxRate wins over the jurisdiction rate; components fall back to the jurisdiction', () => {
    const r = resolveTax({ taxRate: 0.0825, jurisdictionCode: 'CA-LA' }, table);
    assert.deepEqual(r, { ratePpm: 82_500n, jurisdictionCode: 'CA-LA', components: ['state', 'county'], applies: true });
  });

  test('a jurisdiction code alone takes its rate, looked up without regard to case', () => {
    const r = resolveTax({ jurisdictionCode: 'ca-la', taxComponents: ['combined'] }, table);
    assert.deepEqual(r, { ratePpm: 95_000n, jurisdictionCode: 'CA-LA', components: ['combined'], applies: true });
  });

  test('an unknown jurisdiction without taxRate is invalid_input; with taxRate it is recorded as given', () => {
    assertInvalid(() => resolveTax({ jurisdictionCode: 'NY' }, table));
    assert.equal(resolveTax({ jurisdictionCode: 'NY', taxRate: 0.04 }, table).jurisdictionCode, 'NY');
  });

  test('neither rate nor jurisdiction: no tax', () => {
    assert.deepEqual(resolveTax({}, table), { ratePpm: 0n, jurisdictionCode: null, components: [], applies: false });
  });
});

describe('priceOrder', () => {
  test('a full order: item lines, tax on taxable lines only, fee on subtotal + tax, exact total', () => {
    const priced = priceOrder(
      [
        { item: item('coffee', 350n), qty: 2 },
        { item: item('mug', 1299n), qty: 1 },
        { item: item('gift', 2500n, false), qty: 1 },
      ],
      { ratePpm: 95_000n, jurisdictionCode: 'CA-LA' },
      250,
    );
    // subtotal 44.99; taxable 19.99 × 9.5% = 1.89905 → 1.90; (44.99 + 1.90) × 2.5% = 1.17225 → 1.17
    assert.equal(priced.subtotalCents, 4499n);
    assert.equal(priced.taxCents, 190n);
    assert.equal(priced.feeCents, 117n);
    assert.equal(priced.totalCents, 4806n);
    assert.deepEqual(priced.lineItems, [
      { label: 'COFFEE', priceCents: '350', qty: 2, sku: 'coffee', kind: 'item' },
      { label: 'MUG', priceCents: '1299', qty: 1, sku: 'mug', kind: 'item' },
      { label: 'GIFT', priceCents: '2500', qty: 1, sku: 'gift', kind: 'item' },
      { label: 'Tax (CA-LA)', priceCents: '190', kind: 'tax' },
      { label: 'Processing fee', priceCents: '117', kind: 'fee' },
    ]);
  });

  test('half a cent of tax rounds up, and the fee is computed on the rounded tax', () => {
    const priced = priceOrder([{ item: item('a', 200n), qty: 1 }], { ratePpm: 82_500n, jurisdictionCode: null }, 250);
    assert.equal(priced.taxCents, 17n); // 16.5
    assert.equal(priced.feeCents, 5n); // 217 × 2.5% = 5.425
    assert.equal(priced.totalCents, 222n);
    assert.equal(priced.lineItems[1]!.label, 'Tax');
  });

  test('tax is rounded once on the taxable sum, not per line', () => {
    // Two lines of 0.33 at 5%: per line 1.65 → 2 each (4); on the sum 3.3 → 3.
    const priced = priceOrder(
      [
        { item: item('a', 33n), qty: 1 },
        { item: item('b', 33n), qty: 1 },
      ],
      { ratePpm: 50_000n, jurisdictionCode: null },
      0,
    );
    assert.equal(priced.taxCents, 3n);
  });

  test('zero tax and zero fee lines are left out', () => {
    const priced = priceOrder([{ item: item('gift', 2500n, false), qty: 2 }], { ratePpm: 95_000n, jurisdictionCode: 'X' }, 0);
    assert.deepEqual(priced.lineItems, [{ label: 'GIFT', priceCents: '2500', qty: 2, sku: 'gift', kind: 'item' }]);
    assert.equal(priced.totalCents, 5000n);
  });

  test('duplicate skus merge their qty, in first-seen order', () => {
    const coffee = item('coffee', 350n);
    const priced = priceOrder(
      [
        { item: coffee, qty: 1 },
        { item: item('tea', 200n), qty: 1 },
        { item: coffee, qty: 2 },
      ],
      noTax,
      0,
    );
    assert.deepEqual(
      priced.lineItems.map((l) => [l.sku, l.qty]),
      [
        ['coffee', 3],
        ['tea', 1],
      ],
    );
    assert.equal(priced.totalCents, 1250n);
  });

  test('merged qty over the limit, an empty order and an absurd total are refused', () => {
    assertInvalid(() => mergeLines([{ item: item('a', 1n), qty: 600_000 }, { item: item('a', 1n), qty: 600_000 }]));
    assertInvalid(() => priceOrder([], noTax, 0), 'items_required');
    assertInvalid(() => priceOrder([{ item: item('a', 100_000_000_000_000n), qty: 2 }], noTax, 0));
    assert.throws(() => priceOrder([{ item: item('a', 1n), qty: 1 }], noTax, 10_001), RangeError);
  });

  test('errors are InvalidInput instances', () => {
    assert.throws(() => resolveTax({ jurisdictionCode: 'nowhere' }, []), InvalidInput);
  });
});

test('a payee share of a split payment is rounded down, as PaymentSplitter computes it', async () => {
  const { splitterShare } = await import('../../src/lib/money.ts');
  assert.equal(splitterShare(1_000_000n, 50), 5_000n);
  assert.equal(splitterShare(199n, 50), 0n, '0.995 units round down to 0, never up');
  assert.equal(splitterShare(399n, 50), 1n, '1.995 units round down to 1');
  // Per-transfer shares never add up to more than the share of the sum.
  const parts = [199n, 199n, 1n, 3_333_333n];
  const sum = parts.reduce((a, b) => a + b, 0n);
  assert.ok(parts.reduce((a, b) => a + splitterShare(b, 50), 0n) <= splitterShare(sum, 50));
});
