/**
 * Settlement arithmetic (src/payments/settlements.ts): each line's shares are differences of
 * cumulative floors, so summed since the split began they are what PaymentSplitter owes each
 * recipient, and each line's shares plus its unallocated rounding are its gross; and the CSV.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { settlementCsv, settleTransfers, type Settlement, type SettlementTransfer } from '../../src/payments/settlements.ts';

const PLATFORM = '0x000000000000000000000000000000000000beef';
const transfer = (gross: bigint, i = 0): SettlementTransfer => ({ receiptId: `r-${i}`, transactionHash: `0x${'ab'.repeat(32)}`, logIndex: i, blockNumber: BigInt(i + 1), timestamp: 1_767_225_600_000 + i, gross });

test('a line shares by cumulative floors: 1 unit over 3 recipients goes to nobody, and the third unit completes one', () => {
  const recipients = [
    { address: '0x1111111111111111111111111111111111111111', sharesBps: 5000 },
    { address: '0x2222222222222222222222222222222222222222', sharesBps: 4950 },
    { address: PLATFORM, sharesBps: 50 },
  ];
  const lines = settleTransfers(recipients, PLATFORM, 0n, [transfer(1n, 0), transfer(1n, 1), transfer(199n, 2)]);
  assert.deepEqual(lines[0]!.shares, [0n, 0n, 0n]);
  assert.equal(lines[0]!.unallocated, 1n);
  // C = 2: floor(2 × 5000 / 10000) = 1 for the first recipient: it takes the unit the first line left.
  assert.deepEqual(lines[1]!.shares, [1n, 0n, 0n]);
  assert.equal(lines[1]!.unallocated, 0n);
  // C = 201: 100, 99, 1 owed in all.
  assert.deepEqual(lines[2]!.shares, [99n, 99n, 1n]);
  assert.equal(lines[2]!.platformFee, 1n);
  assert.equal(lines[2]!.unallocated, 0n);
  // A transfer that completes units earlier ones left has a negative unallocated amount.
  const [a, b] = settleTransfers(recipients, PLATFORM, 0n, [transfer(3n), transfer(19_997n)]);
  assert.equal(a!.unallocated, 1n, '3 units: 1 to the first, 1 to the second, 1 to nobody (the platform is owed 0.015)');
  assert.equal(b!.shares.reduce((x, y) => x + y, 0n) + b!.unallocated, b!.gross);
  assert.equal(a!.unallocated + b!.unallocated, 0n, 'at C = 20000 everything is owed to someone');
  assert.equal(b!.unallocated, -1n);
});

test('for any split and transfers: shares + unallocated = gross per line; Σ shares since the start = floor(C × s / 10000)', () => {
  const split = fc
    .array(fc.integer({ min: 1, max: 9_999 }), { minLength: 1, maxLength: 6 })
    .map((cuts) => {
      const points = [...new Set(cuts)].sort((x, y) => x - y);
      const bounds = [0, ...points, 10_000];
      return bounds.slice(1).map((b, i) => ({ address: `0x${String(i).padStart(40, '0')}`, sharesBps: b - bounds[i]! }));
    });
  fc.assert(
    fc.property(split, fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.array(fc.bigInt({ min: 1n, max: 10n ** 9n }), { maxLength: 30 }), (recipients, before, grosses) => {
      const lines = settleTransfers(recipients, recipients[0]!.address, before, grosses.map((g, i) => transfer(g, i)));
      let cumulative = before;
      const totals = recipients.map(() => 0n);
      for (const l of lines) {
        assert.equal(l.shares.reduce((x, y) => x + y, 0n) + l.unallocated, l.gross);
        assert.ok(l.shares.every((x) => x >= 0n));
        assert.equal(l.platformFee, l.shares[0]);
        cumulative += l.gross;
        l.shares.forEach((x, i) => (totals[i]! += x));
        recipients.forEach((r, i) => assert.equal(totals[i]! + (before * BigInt(r.sharesBps)) / 10_000n, (cumulative * BigInt(r.sharesBps)) / 10_000n));
      }
    }),
    { numRuns: 200 },
  );
});

test('CSV: a header naming each recipient, one CRLF row per line, a receipt id a spreadsheet would run is defused and quoted when it must be', () => {
  const recipients = [
    { address: '0x1111111111111111111111111111111111111111', sharesBps: 9950 },
    { address: PLATFORM, sharesBps: 50 },
  ];
  const split = '0x3333333333333333333333333333333333333333';
  const lines = settleTransfers(recipients, PLATFORM, 0n, [{ ...transfer(7_000_001n), receiptId: '=HYPERLINK("x",1)' }, { ...transfer(1n, 1), receiptId: null }]).map((l) => ({ ...l, split, version: 1 }));
  const s: Settlement = {
    split,
    versions: [{ version: 1, split, recipients }],
    currency: 'USDC',
    decimals: 6,
    from: 0,
    to: 1,
    toBlock: 2n,
    recipients: [],
    lines,
    totals: { gross: 0n, platformFee: 0n, unallocated: 0n, released: 0n },
  };
  s.recipients = recipients.map((r) => ({ ...r, platform: r.address === PLATFORM, share: 0n, released: 0n, accrued: 0n, releasedToDate: 0n }));
  const csv = settlementCsv(s);
  const rows = csv.split('\r\n');
  assert.equal(rows.at(-1), '', 'ends with CRLF');
  assert.equal(rows[0], `timestamp,block_number,transaction_hash,log_index,receipt_id,version,split,gross,share_${recipients[0]!.address},share_${PLATFORM},platform_fee,unallocated`);
  assert.equal(rows[1], `2026-01-01T00:00:00.000Z,1,0x${'ab'.repeat(32)},0,"'=HYPERLINK(""x"",1)",1,${split},7000001,6965000,35000,35000,1`);
  assert.equal(rows[2], `2026-01-01T00:00:00.001Z,2,0x${'ab'.repeat(32)},1,,1,${split},1,1,0,0,0`);
});
