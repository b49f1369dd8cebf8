/** The payment page's pieces, each drawn from the data it is given. */
import type { ReactNode } from 'react';
import { QrCode } from '../components/QrCode.tsx';
import { shiftDecimal } from '../lib/decimal.ts';
import type { Payment, PaymentView } from './api.ts';
import { chainName, describeStatus } from './status.ts';

const usd = (cents: number, currency: string) =>
  new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.length === 3 ? currency : 'USD' }).format(cents / 100);

/** Whole cents from a dollar amount the API computed from cents: exact after rounding. */
const toCents = (n: number) => Math.round(n * 100);

export function tokenAmount(p: Payment): string {
  return `${shiftDecimal(p.amount, -p.tokenDecimals)} ${p.tokenSymbol}`;
}

export function Summary(props: { view: PaymentView }) {
  const { view } = props;
  return (
    <section className="summary" aria-label="Order summary">
      <ul className="items">
        {view.lineItems.map((item, i) => {
          const qty = item.qty ?? 1;
          return (
            <li key={i} className="item" data-testid="line-item">
              <span className="item-label">
                {item.label}
                {qty > 1 && (
                  <span className="muted small">
                    {' '}
                    {qty} × {usd(toCents(item.priceUsd), view.currency)}
                  </span>
                )}
              </span>
              <span className="item-price">{usd(toCents(item.priceUsd) * qty, view.currency)}</span>
            </li>
          );
        })}
      </ul>
      <div className="total" data-testid="total">
        <span>Total</span>
        <span>{usd(toCents(view.totalUsd), view.currency)}</span>
      </div>
      {view.payment !== null && (
        <p className="muted small pay-in">
          In tokens: <strong>{tokenAmount(view.payment)}</strong> on {chainName(view.payment.chainId)}
        </p>
      )}
    </section>
  );
}

export function StatusPanel(props: { status: string; transactionHash: string | null }) {
  const s = describeStatus(props.status);
  return (
    <section className={`status status-${s.tone}`} data-testid="payment-status" data-status={props.status} role="status" aria-live="polite">
      <strong className="status-title">{s.title}</strong>
      <span className="status-detail">{s.detail}</span>
      {props.transactionHash !== null && (
        <span className="small mono break" title="Transaction hash">
          {props.transactionHash}
        </span>
      )}
    </section>
  );
}

export function Note(props: { kind: 'error' | 'warn' | 'info'; testId?: string; children: ReactNode }) {
  return (
    <div className={`note note-${props.kind}`} role={props.kind === 'error' ? 'alert' : 'status'} data-testid={props.testId}>
      {props.children}
    </div>
  );
}

export function QrPanel(props: { uri: string; amount: string }) {
  return (
    <section className="qr-panel" aria-label="Pay from a mobile wallet" data-testid="qr-panel" data-uri={props.uri}>
      <h2>Pay from a phone</h2>
      <p className="muted small">Scan with a mobile wallet: it opens a transfer of {props.amount} to the merchant.</p>
      <QrCode text={props.uri} label={`QR code of ${props.uri}`} size={200} />
      <a className="wallet-link small" href={props.uri}>
        Open in a wallet app on this device
      </a>
    </section>
  );
}
