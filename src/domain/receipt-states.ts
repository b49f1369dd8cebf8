/**
 * The receipt state machine: every status a receipt can hold, every event that can move it, and
 * pure functions that decide each move (nextStatus) and the steps an event makes (transition).
 * Storage and history sit around it (applyReceiptEvent, src/db/receipt-events.ts, used by tracking
 * statuses in src/domain/receipts.ts, sensitive ones in src/domain/sensitive-status.ts and the
 * chain in src/payments/settle.ts), and webhooks around that; nothing here reads the clock or the
 * chain.
 *
 *   pending / generated ─ tracking, sensitive ─▶ that status (while no money has arrived)
 *        │ money_seen                         covered (swept into the split)      confirmed
 *        └──────────────▶ tx_mined ───────────────▶ recipient_validated ────────────▶ completed
 *                            │ short (at depth)                 ▲ top-up
 *                            └────────────────▶ tx_mismatch ────┘
 *   unpaid ─ expired ─▶ failed ── late money ─▶ tx_mined … completed (exception paid_late)
 *   money withdrawn by a reorganisation before completion ─▶ back to pending / generated
 *     (and receipt.payment_reversed whenever money a receipt had left the chain, completed too)
 *   refunds covering the total ─▶ refunded
 *
 * Tracking and sensitive statuses never move a receipt backwards and never stop the chain from
 * moving it forwards: once money has arrived they are recorded in the history only.
 *
 * Other money alone (ETH or another token found by balance, none of the receipt's token) is no
 * chain event: the status stays, the receipt still expires, and only its exception says
 * wrong_token (a stranger's 1 wei must not hold an order's stock forever).
 */

import { isAwaitingMoney, type InitialStatus, type ReceiptException, type ReceiptStatus, type SensitiveStatus, type TrackingStatus } from '../contract/receipts.ts';

// The statuses and exceptions are the receipts contract's; the moves between them are decided here.
export {
  AWAITING_STATUSES,
  CHAIN_STATUSES,
  INITIAL_STATUSES,
  RECEIPT_EXCEPTIONS,
  REFUND_STATUS_PREFIX,
  TRACKING_STATUSES,
  isAwaitingMoney,
  isSensitiveStatus,
  isTrackingStatus,
  type ChainStatus,
  type InitialStatus,
  type ReceiptException,
  type ReceiptStatus,
  type SensitiveStatus,
  type TrackingStatus,
} from '../contract/receipts.ts';

export type ReceiptEvent =
  | { type: 'tracking'; status: TrackingStatus }
  | { type: 'sensitive'; status: SensitiveStatus }
  /** A transfer into the payment address is in a block; what arrived does not (yet) settle it. */
  | { type: 'money_seen' }
  /** The counted transfers cover the amount and all of it was swept into the split. */
  | { type: 'covered' }
  /** covered, with every counted transfer and sweep CONFIRMATIONS deep. */
  | { type: 'confirmed' }
  /** At depth, the counted transfers do not cover the amount (too little of the receipt's token). */
  | { type: 'short' }
  /** A reorganisation removed every transfer the receipt had. */
  | { type: 'withdrawn'; initial: InitialStatus }
  /** The receipt's time ran out with nothing received. */
  | { type: 'expired' }
  /** Refunds now cover the total. */
  | { type: 'refunded' };

/** A status sent to the service (tracking, or sensitive from the admin app): always recorded. */
export type StatusEvent = Extract<ReceiptEvent, { type: 'tracking' | 'sensitive' }>;

/** What to do: move to a status, record the event in the history only, or nothing at all. */
export type Decision = { move: ReceiptStatus } | { record: true } | null;

/** The receipt's status after an event, from its status before. Pure and total. */
export function nextStatus(state: ReceiptStatus, event: ReceiptEvent): Decision {
  const awaiting = isAwaitingMoney(state);
  const to = (status: ReceiptStatus): Decision => (status === state ? null : { move: status });
  switch (event.type) {
    case 'tracking':
    case 'sensitive':
      return awaiting ? to(event.status) : { record: true };
    case 'money_seen':
      return awaiting || state === 'failed' ? to('tx_mined') : null;
    case 'covered':
      return state === 'completed' || state === 'refunded' ? null : to('recipient_validated');
    case 'confirmed':
      return state === 'refunded' ? null : to('completed');
    case 'short':
      return awaiting || state === 'failed' || state === 'tx_mined' || state === 'recipient_validated' ? to('tx_mismatch') : null;
    case 'withdrawn':
      return state === 'tx_mined' || state === 'recipient_validated' || state === 'tx_mismatch' ? to(event.initial) : null;
    case 'expired':
      return awaiting ? to('failed') : null;
    case 'refunded':
      return to('refunded');
  }
}

/** One entry a transition appends to the receipt's history. */
export interface HistoryStep {
  status: ReceiptStatus;
  /** The receipt did not move to this status: it is kept in the history alone (money has arrived). */
  recordedOnly: boolean;
}

/** What an event does to a receipt: the status it holds afterwards and the history entries to append. */
export interface Transition {
  to: ReceiptStatus;
  /** Oldest first; every status a chain event passes through, `to` last. */
  steps: HistoryStep[];
}

/**
 * The chain events an event stands for, in order: money covered was first seen, and money
 * confirmed was first covered. A receipt passes through each status they move it to, so its
 * history shows every one even when the chain reports them at once (with CONFIRMATIONS=1 a
 * transfer is deep when first seen).
 */
function impliedEvents(event: ReceiptEvent): ReceiptEvent[] {
  switch (event.type) {
    case 'short':
    case 'covered':
      return [{ type: 'money_seen' }, event];
    case 'confirmed':
      return [{ type: 'money_seen' }, { type: 'covered' }, event];
    default:
      return [event];
  }
}

/**
 * The transition an event makes from a status, or null when the event changes nothing (refused).
 * Pure, like nextStatus, which decides each of its steps.
 *
 * A tracking or sensitive status is always recorded: it becomes the status while the receipt
 * awaits money (also when it holds that status already, so the entry is added again), and after
 * that it is kept in the history only. Any other event moves the receipt through the statuses of
 * the events it implies, or is refused.
 */
export function transition(state: ReceiptStatus, event: StatusEvent): Transition;
export function transition(state: ReceiptStatus, event: ReceiptEvent): Transition | null;
export function transition(state: ReceiptStatus, event: ReceiptEvent): Transition | null {
  if (event.type === 'tracking' || event.type === 'sensitive') {
    const decision = nextStatus(state, event);
    const recordedOnly = decision !== null && 'record' in decision;
    return { to: recordedOnly ? state : event.status, steps: [{ status: event.status, recordedOnly }] };
  }
  let at = state;
  const steps: HistoryStep[] = [];
  for (const implied of impliedEvents(event)) {
    const decision = nextStatus(at, implied);
    if (decision === null || !('move' in decision)) continue;
    at = decision.move;
    steps.push({ status: at, recordedOnly: false });
  }
  return steps.length === 0 ? null : { to: at, steps };
}

/** Whether a transition sets the receipt's status (to a new one, or a tracking status again), rather than only recording. */
export function setsStatus(t: Transition): boolean {
  return t.steps.some((step) => !step.recordedOnly);
}

export interface PaymentFacts {
  /** The receipt's total in token base units. */
  amount: bigint;
  /** The sum of its counted transfers (the receipt's token only, more than zero). */
  paid: bigint;
  /** Another token or native ETH was found at the payment address by its balance (never by a log). */
  wrongToken: boolean;
  /** Every counted transfer (the receipt's token, more than zero) is at the confirmation depth. */
  atDepth: boolean;
  /** Everything counted has been swept into the split. */
  swept: boolean;
  /** The sweep into the split is at the confirmation depth too. */
  sweptAtDepth: boolean;
  /** The receipt had expired with nothing received before this money came. */
  expiredBefore: boolean;
}

/**
 * The chain event the facts amount to, or null when none of the receipt's token has arrived. Other
 * money (wrongToken) never moves a status: it only gives the exception (exceptionOf).
 */
export function chainEvent(f: PaymentFacts): ReceiptEvent | null {
  if (f.paid === 0n) return null;
  if (f.paid >= f.amount && f.swept) return f.atDepth && f.sweptAtDepth ? { type: 'confirmed' } : { type: 'covered' };
  if (f.paid < f.amount && f.atDepth) return { type: 'short' };
  return { type: 'money_seen' };
}

/** The exception a receipt shows beside its status. */
export function exceptionOf(f: Pick<PaymentFacts, 'amount' | 'paid' | 'wrongToken' | 'expiredBefore'>): ReceiptException | null {
  if (f.paid === 0n) return f.wrongToken ? 'wrong_token' : f.expiredBefore ? 'expired' : null;
  if (f.expiredBefore) return 'paid_late';
  if (f.paid < f.amount) return 'underpaid';
  if (f.paid > f.amount) return 'overpaid';
  return null;
}

/** What is still missing, never negative. */
export function dueOf(amount: bigint, paid: bigint): bigint {
  return paid >= amount ? 0n : amount - paid;
}
