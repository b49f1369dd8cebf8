/**
 * What the payment page shows, decided from the server's answer alone (status, exception, and
 * the amounts paid and due; DESIGN.md "Receipt states" and "Payments") plus whether this browser
 * has just sent a transaction. A pure function, so every state can be reasoned about on its own.
 */
import { isAwaitingMoney, type ChainStatus, type ReceiptException } from '../../../src/contract/receipts.ts';

/** Statuses after which nothing more will happen on this page. */
export const FINAL: ReadonlySet<string> = new Set<ChainStatus>(['completed', 'refunded']);
/** Money is at the receipt's payment address and being confirmed and swept. */
export const IN_FLIGHT: ReadonlySet<string> = new Set<ChainStatus>(['tx_mined', 'recipient_validated']);

/**
 * No money has reached the receipt yet: the initial statuses, the tracking statuses, and the
 * sensitive ones a merchant may set on an unpaid receipt (checkout_success, refund_*).
 */
export const isUnpaid = isAwaitingMoney;

export type Phase =
  /** Nothing arrived yet: pay, with the time left. */
  | 'unpaid'
  /** Another token arrived; it does not count, and the right one is still asked for. */
  | 'wrong_token'
  /** Part of the amount arrived: the rest is asked for, at the same address. */
  | 'partial'
  /** This browser sent a transaction that the server has not seen yet. */
  | 'sent'
  /** Everything due arrived and is being confirmed. */
  | 'confirming'
  | 'completed'
  | 'refunded'
  /** The time ran out with nothing received: nothing more is offered. */
  | 'expired';

export interface PhaseInput {
  status: string;
  exception: ReceiptException | null;
  /** Token base units as decimal strings; null when the server has no chain. */
  paid: string | null;
  due: string | null;
  /** What had been paid when this browser sent its transaction, or null when it sent none. */
  paidWhenSent: string | null;
}

export function phaseOf(p: PhaseInput): Phase {
  if (p.status === 'refunded') return 'refunded';
  if (p.status === 'completed') return 'completed';
  const paid = BigInt(p.paid ?? '0');
  const due = BigInt(p.due ?? '0');
  // Until the server counts more than before the send, this browser's transaction is on its way.
  if (p.paidWhenSent !== null && paid <= BigInt(p.paidWhenSent)) return 'sent';
  if (p.status === 'failed' || p.exception === 'expired') return paid > 0n ? 'confirming' : 'expired';
  if (paid > 0n && due > 0n) return 'partial';
  if (p.exception === 'wrong_token' && paid === 0n) return 'wrong_token';
  if (IN_FLIGHT.has(p.status) || (paid > 0n && due === 0n)) return 'confirming';
  return 'unpaid';
}

/** The phases in which the page offers to pay (button and QR code). */
export function canOfferPayment(phase: Phase): boolean {
  return phase === 'unpaid' || phase === 'partial' || phase === 'wrong_token';
}

export type Tone = 'wait' | 'progress' | 'ok' | 'bad';

export function describePhase(phase: Phase, exception: string | null): { tone: Tone; title: string; detail: string } {
  switch (phase) {
    case 'sent':
      return {
        tone: 'progress',
        title: 'Payment sent, confirming',
        detail: 'Your transaction is on its way. This page updates by itself; you may keep it open or close it.',
      };
    case 'confirming':
      return { tone: 'progress', title: 'Payment received, confirming', detail: 'Waiting for the network to confirm it…' };
    case 'completed':
      return {
        tone: 'ok',
        title: 'Paid',
        detail:
          exception === 'paid_late'
            ? 'The payment arrived after the receipt had expired and was credited. Thank you!'
            : 'The payment is confirmed. Thank you!',
      };
    case 'refunded':
      return { tone: 'ok', title: 'Refunded', detail: 'The merchant refunded this receipt.' };
    case 'expired':
      return {
        tone: 'bad',
        title: 'This receipt has expired',
        detail: 'Nothing was received in time, so it can no longer be paid. Ask the merchant for a new payment link.',
      };
    case 'partial':
      return {
        tone: 'bad',
        title: 'Partly paid',
        detail: 'Less than the total arrived. Send the rest, below, to the same address to complete the payment.',
      };
    case 'wrong_token':
      return {
        tone: 'bad',
        title: 'The wrong token arrived',
        detail: 'A transfer of another token reached this receipt; it does not count toward the total. Pay with the token below.',
      };
    case 'unpaid':
      return { tone: 'wait', title: 'Awaiting payment', detail: 'Pay with a browser wallet, or scan the code with a mobile wallet.' };
  }
}

export { chainName } from '../lib/wallet.ts';
