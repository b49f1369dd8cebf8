/**
 * Every (status, event) pair of the receipt state machine, against a table written out by hand:
 * a change to the rules has to change this table too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  chainEvent,
  dueOf,
  exceptionOf,
  nextStatus,
  type PaymentFacts,
  type ReceiptEvent,
  type ReceiptStatus,
} from '../../src/domain/receipt-states.ts';
import { countedTransfers, factsOf } from '../../src/payments/settle.ts';

const STATES: ReceiptStatus[] = [
  'pending',
  'generated',
  'link_opened',
  'buyer_logged_in',
  'checkout_initialized',
  'checkout_success',
  'refund_requested',
  'tx_mined',
  'recipient_validated',
  'tx_mismatch',
  'completed',
  'failed',
  'refunded',
];

const EVENTS: [string, ReceiptEvent][] = [
  ['link_opened', { type: 'tracking', status: 'link_opened' }],
  ['buyer_logged_in', { type: 'tracking', status: 'buyer_logged_in' }],
  ['checkout_initialized', { type: 'tracking', status: 'checkout_initialized' }],
  ['checkout_success', { type: 'sensitive', status: 'checkout_success' }],
  ['refund_requested', { type: 'sensitive', status: 'refund_requested' }],
  ['money_seen', { type: 'money_seen' }],
  ['covered', { type: 'covered' }],
  ['confirmed', { type: 'confirmed' }],
  ['short', { type: 'short' }],
  ['withdrawn→pending', { type: 'withdrawn', initial: 'pending' }],
  ['withdrawn→generated', { type: 'withdrawn', initial: 'generated' }],
  ['expired', { type: 'expired' }],
  ['refunded', { type: 'refunded' }],
];

// Columns follow EVENTS; '=' is no change, 'rec' is "history only", anything else the new status.
const TABLE: Record<string, string[]> = {
  //                      link   login  init   succ   refund mined  covered   confirmed short    w→p      w→g        expired refunded
  pending: /*          */ ['link_opened', 'buyer_logged_in', 'checkout_initialized', 'checkout_success', 'refund_requested', 'tx_mined', 'recipient_validated', 'completed', 'tx_mismatch', '=', '=', 'failed', 'refunded'],
  generated: /*        */ ['link_opened', 'buyer_logged_in', 'checkout_initialized', 'checkout_success', 'refund_requested', 'tx_mined', 'recipient_validated', 'completed', 'tx_mismatch', '=', '=', 'failed', 'refunded'],
  link_opened: /*      */ ['=', 'buyer_logged_in', 'checkout_initialized', 'checkout_success', 'refund_requested', 'tx_mined', 'recipient_validated', 'completed', 'tx_mismatch', '=', '=', 'failed', 'refunded'],
  buyer_logged_in: /*  */ ['link_opened', '=', 'checkout_initialized', 'checkout_success', 'refund_requested', 'tx_mined', 'recipient_validated', 'completed', 'tx_mismatch', '=', '=', 'failed', 'refunded'],
  checkout_initialized: ['link_opened', 'buyer_logged_in', '=', 'checkout_success', 'refund_requested', 'tx_mined', 'recipient_validated', 'completed', 'tx_mismatch', '=', '=', 'failed', 'refunded'],
  checkout_success: /* */ ['link_opened', 'buyer_logged_in', 'checkout_initialized', '=', 'refund_requested', 'tx_mined', 'recipient_validated', 'completed', 'tx_mismatch', '=', '=', 'failed', 'refunded'],
  refund_requested: /* */ ['link_opened', 'buyer_logged_in', 'checkout_initialized', 'checkout_success', '=', 'tx_mined', 'recipient_validated', 'completed', 'tx_mismatch', '=', '=', 'failed', 'refunded'],
  tx_mined: /*         */ ['rec', 'rec', 'rec', 'rec', 'rec', '=', 'recipient_validated', 'completed', 'tx_mismatch', 'pending', 'generated', '=', 'refunded'],
  recipient_validated:    ['rec', 'rec', 'rec', 'rec', 'rec', '=', '=', 'completed', 'tx_mismatch', 'pending', 'generated', '=', 'refunded'],
  tx_mismatch: /*      */ ['rec', 'rec', 'rec', 'rec', 'rec', '=', 'recipient_validated', 'completed', '=', 'pending', 'generated', '=', 'refunded'],
  completed: /*        */ ['rec', 'rec', 'rec', 'rec', 'rec', '=', '=', '=', '=', '=', '=', '=', 'refunded'],
  failed: /*           */ ['rec', 'rec', 'rec', 'rec', 'rec', 'tx_mined', 'recipient_validated', 'completed', 'tx_mismatch', '=', '=', '=', 'refunded'],
  refunded: /*         */ ['rec', 'rec', 'rec', 'rec', 'rec', '=', '=', '=', '=', '=', '=', '=', '='],
};

test('the table names every status and every event', () => {
  assert.deepEqual(Object.keys(TABLE).sort(), [...STATES].sort());
  for (const row of Object.values(TABLE)) assert.equal(row.length, EVENTS.length);
});

for (const state of STATES) {
  test(`from ${state}: every event`, () => {
    EVENTS.forEach(([name, event], i) => {
      const want = TABLE[state]![i]!;
      const got = nextStatus(state, event);
      const shown = got === null ? '=' : 'record' in got ? 'rec' : got.move;
      assert.equal(shown, want, `${state} + ${name}`);
    });
  });
}

const facts = (f: Partial<PaymentFacts>): PaymentFacts => ({
  amount: 1_000_000n,
  paid: 0n,
  wrongToken: false,
  atDepth: false,
  swept: false,
  sweptAtDepth: false,
  expiredBefore: false,
  ...f,
});

test('chain events from payment facts', () => {
  assert.equal(chainEvent(facts({})), null, 'nothing arrived');
  // Other money alone is no chain event: a stranger's 1 wei must never park a receipt.
  assert.equal(chainEvent(facts({ wrongToken: true })), null, 'only another token');
  assert.equal(chainEvent(facts({ wrongToken: true, atDepth: true, sweptAtDepth: true })), null, 'only another token, at depth');
  assert.equal(chainEvent(facts({ wrongToken: true, atDepth: true, expiredBefore: true })), null, 'only another token, after expiry');
  assert.deepEqual(chainEvent(facts({ paid: 400_000n, wrongToken: true, atDepth: true })), { type: 'short' }, 'too little of the token beside another');
  assert.deepEqual(chainEvent(facts({ paid: 400_000n })), { type: 'money_seen' }, 'too little, not yet deep');
  assert.deepEqual(chainEvent(facts({ paid: 400_000n, atDepth: true })), { type: 'short' });
  assert.deepEqual(chainEvent(facts({ paid: 1_000_000n })), { type: 'money_seen' }, 'enough, not swept');
  assert.deepEqual(chainEvent(facts({ paid: 1_000_000n, atDepth: true })), { type: 'money_seen' }, 'enough at depth, not swept');
  assert.deepEqual(chainEvent(facts({ paid: 1_000_000n, swept: true })), { type: 'covered' });
  assert.deepEqual(chainEvent(facts({ paid: 1_000_000n, swept: true, atDepth: true })), { type: 'covered' }, 'sweep not yet deep');
  assert.deepEqual(chainEvent(facts({ paid: 1_000_001n, swept: true, atDepth: true, sweptAtDepth: true })), { type: 'confirmed' });
});

test('exceptions from payment facts', () => {
  assert.equal(exceptionOf(facts({})), null);
  assert.equal(exceptionOf(facts({ expiredBefore: true })), 'expired');
  assert.equal(exceptionOf(facts({ wrongToken: true })), 'wrong_token');
  assert.equal(exceptionOf(facts({ wrongToken: true, expiredBefore: true })), 'wrong_token', 'expired with other money there: the merchant still sees it');
  assert.equal(exceptionOf(facts({ paid: 1n })), 'underpaid');
  assert.equal(exceptionOf(facts({ paid: 1_000_000n })), null);
  assert.equal(exceptionOf(facts({ paid: 1_000_000n, wrongToken: true })), null, 'another token beside a full payment is not an exception');
  assert.equal(exceptionOf(facts({ paid: 1_000_001n })), 'overpaid');
  assert.equal(exceptionOf(facts({ paid: 1_000_000n, expiredBefore: true })), 'paid_late');
  assert.equal(dueOf(1_000_000n, 400_000n), 600_000n);
  assert.equal(dueOf(1_000_000n, 2_000_000n), 0n);
});

const TOKEN = '0x00000000000000000000000000000000000000aa';
let seq = 0;
const row = (p: { kind?: 'in' | 'sweep'; token?: string; amount: bigint; block: bigint; from?: string }) => ({
  transactionHash: `0x${(++seq).toString(16).padStart(64, '0')}`,
  logIndex: 0,
  wallet: '0x1',
  receiptId: 'r',
  kind: p.kind ?? 'in',
  token: p.token ?? TOKEN,
  fromAddress: p.from ?? '0xbuyer',
  amountUnits: p.amount.toString(),
  blockNumber: p.block,
  blockHash: '0x',
  timestamp: 0,
});
const receiptRow = { totalCents: 100n, expiredAt: null } as Parameters<typeof factsOf>[0];
const ctx = { token: TOKEN, decimals: 6, head: 100n, confirmations: 3 };

test("only the receipt's token, more than zero, is money: other contracts' logs and zero-value transfers change no fact", () => {
  const paid = row({ amount: 1_000_000n, block: 90n });
  const sweep = row({ kind: 'sweep', amount: 1_000_000n, block: 91n });
  const noise = [
    row({ token: '0x00000000000000000000000000000000000000bb', amount: 5n, block: 100n }),
    row({ amount: 0n, block: 100n, from: '0xstranger' }),
    row({ kind: 'sweep', amount: 0n, block: 100n }),
  ];
  const clean = factsOf(receiptRow, [paid, sweep], ctx);
  const noisy = factsOf(receiptRow, [...noise, paid, sweep], ctx);
  assert.deepEqual(noisy, clean, 'fresh noise at the head does not hold the receipt back from depth');
  assert.deepEqual(chainEvent(noisy), { type: 'confirmed' });
  assert.equal(noisy.wrongToken, false, 'another token is found by balance, never by a log');
  assert.deepEqual(countedTransfers([...noise, paid], TOKEN), [paid]);
  const onlyNoise = factsOf(receiptRow, noise, ctx);
  assert.equal(onlyNoise.paid, 0n);
  assert.equal(chainEvent(onlyNoise), null, 'nothing arrived');
  assert.equal(exceptionOf(onlyNoise), null);
  assert.equal(factsOf(receiptRow, noise, ctx, { wrongToken: true }).wrongToken, true, 'a balance says so');
});

test('other money alone never moves a status and never stops expiry', () => {
  // What settle does with such facts: no chain event is "withdrawn" to where the receipt began.
  const event = chainEvent(facts({ wrongToken: true, atDepth: true, sweptAtDepth: true })) ?? { type: 'withdrawn', initial: 'pending' };
  for (const state of STATES) {
    const awaiting = TABLE[state]![EVENTS.findIndex(([name]) => name === 'expired')] === 'failed';
    if (awaiting || state === 'failed') assert.equal(nextStatus(state, event), null, `${state} stays with only other money`);
    if (awaiting) assert.deepEqual(nextStatus(state, { type: 'expired' }), { move: 'failed' }, `${state} still expires`);
  }
});
