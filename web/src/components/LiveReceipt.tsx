/**
 * A just-created receipt followed live, as a card terminal does: its status, what was paid and
 * what is due, its exception and the time left, read every second until it is paid or failed.
 */
import { useEffect, useState } from 'react';
import { ReceiptDetail as ReceiptDetailSchema, type ReceiptDetail } from '../../../src/contract/receipts.ts';
import { ApiError, call, messageOf } from '../lib/http.ts';
import { shiftDecimal } from '../lib/decimal.ts';
import { statusLabel } from '../lib/format.ts';
import { isUnpaid } from '../pay/status.ts';
import { Countdown } from './Countdown.tsx';

/**
 * The payment fields of GET /api/receipts/:id (the admin session's call). Amounts are token base
 * units; the receipts API states them in USDC's 6 decimals.
 */
export type LivePayment = Pick<ReceiptDetail, 'receiptId' | 'status' | 'exception' | 'expiresAt' | 'amountPaid' | 'amountDue'>;

const USDC_DECIMALS = 6;
const POLL_MS = 1000;
/** After a 429, wait this long before asking again. */
const POLL_LIMITED_MS = 5000;
/** Nothing more will change that the person at the till waits for. */
const DONE = new Set(['completed', 'failed', 'refunded']);

export const usdc = (units: string) => `${shiftDecimal(units, -USDC_DECIMALS)} USDC`;

export interface Live {
  payment: LivePayment | null;
  error: string | null;
}

/** Reads the receipt every second until DONE, a refusal (404, 401), or the card unmounts. */
export function useLiveReceipt(receiptId: string): Live {
  const [live, setLive] = useState<Live>({ payment: null, error: null });
  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const poll = async () => {
      let delay = POLL_MS;
      try {
        const payment: LivePayment = await call('GET', `/api/receipts/${encodeURIComponent(receiptId)}`, ReceiptDetailSchema);
        if (stopped) return;
        setLive({ payment, error: null });
        if (DONE.has(payment.status)) return;
      } catch (err) {
        if (stopped) return;
        setLive((prev) => ({ ...prev, error: messageOf(err) }));
        if (err instanceof ApiError && (err.status === 401 || err.status === 403 || err.status === 404)) return;
        if (err instanceof ApiError && err.status === 429) delay = POLL_LIMITED_MS;
      }
      timer = window.setTimeout(() => void poll(), delay);
    };
    void poll();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [receiptId]);
  return live;
}

const EXCEPTIONS: Record<string, string> = {
  underpaid: 'Underpaid',
  overpaid: 'Overpaid',
  wrong_token: 'Wrong token received',
  expired: 'Expired',
  paid_late: 'Paid late',
};

function stateLine(p: LivePayment): string {
  if (isUnpaid(p.status)) return p.exception === 'wrong_token' ? 'Waiting for the buyer to pay; another token arrived, it does not count' : 'Waiting for the buyer to pay';
  switch (p.status) {
    case 'tx_mined':
      return 'Payment seen on chain, confirming…';
    case 'recipient_validated':
      return 'Payment received, confirming…';
    case 'tx_mismatch':
      return p.exception === 'wrong_token' ? 'Another token arrived; it does not count' : `Partly paid: ${usdc(p.amountDue)} still due`;
    case 'failed':
      return p.exception === 'wrong_token' ? 'Expired: none of its token arrived; another token is at its address (sweep it)' : 'Expired: nothing was received';
    case 'refunded':
      return 'Refunded';
    default:
      return statusLabel(p.status);
  }
}

/** What the card shows of the live payment. */
export function LiveStatus(props: { live: Live }) {
  const p = props.live.payment;
  if (p === null) {
    return (
      <div className="live" data-testid="live-status">
        <p className="muted">{props.live.error === null ? 'Reading the payment status…' : `Status unavailable: ${props.live.error}`}</p>
      </div>
    );
  }
  const paid = p.status === 'completed';
  const tone = paid ? 'ok' : p.status === 'failed' || p.status === 'tx_mismatch' ? 'bad' : p.status === 'tx_mined' || p.status === 'recipient_validated' ? 'progress' : 'wait';
  return (
    <div className={`live live-${tone}`} data-testid="live-status" data-status={p.status} role="status" aria-live="polite">
      {paid ? (
        <p className="live-paid" data-testid="live-paid-banner">
          Paid
        </p>
      ) : (
        <p className="live-state" data-testid="live-state">
          {stateLine(p)}
        </p>
      )}
      <dl className="live-amounts">
        <div>
          <dt>Paid</dt>
          <dd data-testid="live-paid">{usdc(p.amountPaid)}</dd>
        </div>
        <div>
          <dt>Due</dt>
          <dd data-testid="live-due">{usdc(p.amountDue)}</dd>
        </div>
      </dl>
      {p.exception !== null && (
        <p className="live-exception" data-testid="live-exception">
          {EXCEPTIONS[p.exception] ?? p.exception}
        </p>
      )}
      {isUnpaid(p.status) && <Countdown expiresAt={p.expiresAt} className="live-countdown" />}
      {props.live.error !== null && <p className="muted small">Connection trouble ({props.live.error}); retrying…</p>}
    </div>
  );
}
