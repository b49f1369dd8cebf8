/**
 * The steps every event makes from every status (transition), against a table written out by
 * hand: the history entries a receipt gains, and whether an event is refused or only recorded.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setsStatus, transition, type ReceiptEvent, type ReceiptStatus, type StatusEvent, type Transition } from '../../src/domain/receipt-states.ts';

const AWAITING: ReceiptStatus[] = ['pending', 'generated', 'link_opened', 'buyer_logged_in', 'checkout_initialized', 'checkout_success', 'refund_requested'];
const PAID: ReceiptStatus[] = ['tx_mined', 'recipient_validated', 'tx_mismatch', 'completed', 'refunded'];

const EVENTS: Record<string, ReceiptEvent> = {
  money_seen: { type: 'money_seen' },
  covered: { type: 'covered' },
  confirmed: { type: 'confirmed' },
  short: { type: 'short' },
  'withdrawn→pending': { type: 'withdrawn', initial: 'pending' },
  expired: { type: 'expired' },
  refunded: { type: 'refunded' },
};

/** The statuses each event passes through, `>` between them; '-' is refused. */
const AWAITING_STEPS: Record<string, string> = {
  money_seen: 'tx_mined',
  covered: 'tx_mined>recipient_validated',
  confirmed: 'tx_mined>recipient_validated>completed',
  short: 'tx_mined>tx_mismatch',
  'withdrawn→pending': '-',
  expired: 'failed',
  refunded: 'refunded',
};

const STEPS: Record<string, Record<string, string>> = {
  ...Object.fromEntries(AWAITING.map((s) => [s, AWAITING_STEPS])),
  tx_mined: { money_seen: '-', covered: 'recipient_validated', confirmed: 'recipient_validated>completed', short: 'tx_mismatch', 'withdrawn→pending': 'pending', expired: '-', refunded: 'refunded' },
  recipient_validated: { money_seen: '-', covered: '-', confirmed: 'completed', short: 'tx_mismatch', 'withdrawn→pending': 'pending', expired: '-', refunded: 'refunded' },
  tx_mismatch: { money_seen: '-', covered: 'recipient_validated', confirmed: 'recipient_validated>completed', short: '-', 'withdrawn→pending': 'pending', expired: '-', refunded: 'refunded' },
  completed: { money_seen: '-', covered: '-', confirmed: '-', short: '-', 'withdrawn→pending': '-', expired: '-', refunded: 'refunded' },
  failed: { money_seen: 'tx_mined', covered: 'tx_mined>recipient_validated', confirmed: 'tx_mined>recipient_validated>completed', short: 'tx_mined>tx_mismatch', 'withdrawn→pending': '-', expired: '-', refunded: 'refunded' },
  refunded: { money_seen: '-', covered: '-', confirmed: '-', short: '-', 'withdrawn→pending': '-', expired: '-', refunded: '-' },
};

for (const [state, row] of Object.entries(STEPS)) {
  test(`from ${state}: the steps of every chain event`, () => {
    for (const [name, event] of Object.entries(EVENTS)) {
      const t = transition(state as ReceiptStatus, event);
      const shown = t === null ? '-' : t.steps.map((s) => s.status).join('>');
      assert.equal(shown, row[name], `${state} + ${name}`);
      if (t === null) continue;
      assert.equal(t.to, t.steps.at(-1)!.status, `${state} + ${name}: ends in its last step`);
      assert.ok(t.steps.every((s) => !s.recordedOnly), `${state} + ${name}: every step is a move`);
    }
  });
}

test('a tracking or sensitive status is always recorded: set while money is awaited (again if held), in the history alone after', () => {
  for (const status of ['link_opened', 'checkout_success'] as const) {
    const event: StatusEvent = status === 'link_opened' ? { type: 'tracking', status } : { type: 'sensitive', status };
    for (const state of [...AWAITING, 'failed' as const, ...PAID]) {
      const t: Transition = transition(state, event);
      const awaiting = AWAITING.includes(state);
      assert.deepEqual(t, { to: awaiting ? status : state, steps: [{ status, recordedOnly: !awaiting }] }, `${state} + ${status}`);
      assert.equal(setsStatus(t), awaiting, `${state} + ${status}: sets the status`);
    }
  }
});
