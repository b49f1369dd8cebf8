/** The payment page's pieces, each drawn from the data it is given. */
import { Button } from '../components/Button.tsx';
import { Countdown } from '../components/Countdown.tsx';
import { ErrorText } from '../components/ErrorText.tsx';
import { Notice } from '../components/Notice.tsx';
import { QrCode } from '../components/QrCode.tsx';
import { shiftDecimal } from '../lib/decimal.ts';
import type { Payment, PaymentView } from './api.ts';
import { chainName, describePhase, type Phase } from './status.ts';
import { eip681, type Payable } from './wallet-pay.ts';

const usd = (cents: number, currency: string) =>
  new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.length === 3 ? currency : 'USD' }).format(cents / 100);

/** Whole cents from a dollar amount the API computed from cents: exact after rounding. */
const toCents = (n: number) => Math.round(n * 100);

/** Base units of the receipt's token, as a person reads them: "12.5 USDC". */
export function tokenUnits(units: string | bigint, p: Pick<Payment, 'tokenDecimals' | 'tokenSymbol'>): string {
  return `${shiftDecimal(units.toString(), -p.tokenDecimals)} ${p.tokenSymbol}`;
}

export function tokenAmount(p: Payment): string {
  return tokenUnits(p.amount, p);
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

export function StatusPanel(props: { status: string; exception: string | null; phase: Phase; transactionHash: string | null }) {
  const s = describePhase(props.phase, props.exception);
  return (
    <section
      className={`status status-${s.tone}`}
      data-testid="payment-status"
      data-status={props.status}
      data-phase={props.phase}
      role="status"
      aria-live="polite"
    >
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

/** Paid so far and still due, once anything has arrived. */
export function Amounts(props: { payment: Payment }) {
  const p = props.payment;
  return (
    <dl className="amounts" data-testid="amounts">
      <div>
        <dt>Paid so far</dt>
        <dd data-testid="amount-paid">{tokenUnits(p.paid, p)}</dd>
      </div>
      <div>
        <dt>Still due</dt>
        <dd data-testid="amount-due">{tokenUnits(p.due, p)}</dd>
      </div>
    </dl>
  );
}

/** More than the total arrived: how much, and the surplus, which the merchant may refund. */
export function Overpaid(props: { payment: Payment }) {
  const p = props.payment;
  const surplus = BigInt(p.paid) - BigInt(p.amount);
  return (
    <Notice kind="info" testId="overpaid">
      <strong>You paid more than the total.</strong> {tokenUnits(p.paid, p)} arrived for a total of {tokenAmount(p)}: a
      surplus of <strong data-testid="surplus">{tokenUnits(surplus > 0n ? surplus : 0n, p)}</strong>. Ask the merchant to
      refund it.
    </Notice>
  );
}

export function QrPanel(props: { uri: string; amount: string; payTo: string }) {
  return (
    <section className="qr-panel" aria-label="Pay from a mobile wallet" data-testid="qr-panel" data-uri={props.uri}>
      <h2>Pay from a phone</h2>
      <p className="muted small">
        Scan with a mobile wallet: it opens a transfer of {props.amount} to this receipt’s payment address,{' '}
        <span className="mono break" data-testid="pay-to">
          {props.payTo}
        </span>
        .
      </p>
      <QrCode text={props.uri} label={`QR code of ${props.uri}`} size={200} />
      <a className="wallet-link small" href={props.uri}>
        Open in a wallet app on this device
      </a>
    </section>
  );
}

const NO_WALLET =
  'No browser wallet was found in this browser. Install a wallet extension (or open this page in your wallet app’s browser), ' +
  'or scan the QR code with a mobile wallet.';

/** The offer to pay what is due: the time left, the wallet button and the QR code. */
export function PayOffer(props: {
  payable: Payable;
  phase: Phase;
  expiresAt: number;
  busy: string | null;
  /** One sentence, and the wallet's own words folded underneath. */
  error: { message: string; detail: string | null } | null;
  account: string | null;
  hasWallet: boolean;
  walletAsked: boolean;
  onPay: () => void;
  /** Pay without gas, when the token and the service allow it; null hides the offer. */
  onPayGasless: (() => void) | null;
}) {
  const { payable, phase } = props;
  const due = tokenUnits(payable.due, payable);
  return (
    <>
      <section className="pay-panel" aria-label="Pay with a browser wallet">
        {/* Only a receipt that received nothing expires: after a partial payment, or another token, the rest may come any time. */}
        {phase === 'unpaid' && <Countdown expiresAt={props.expiresAt} />}
        {!props.hasWallet && (
          <Notice kind={props.walletAsked ? 'error' : 'info'} testId="no-wallet">
            {NO_WALLET}
          </Notice>
        )}
        <Button variant="primary" block className="btn-pay" disabled={props.busy !== null} onClick={props.onPay}>
          {phase === 'partial' ? `Pay the remaining ${due}` : `Pay ${due}`} with a browser wallet
        </Button>
        {props.onPayGasless !== null && props.hasWallet && (
          <div className="gasless" data-testid="gasless-offer">
            <Button block className="btn-pay-gasless" disabled={props.busy !== null} onClick={props.onPayGasless}>
              {phase === 'partial' ? `Pay the remaining ${due}` : `Pay ${due}`} without gas
            </Button>
            <p className="muted small">
              No ETH needed: you sign once in your wallet and the service sends the payment and pays its network fee.
            </p>
          </div>
        )}
        {props.account !== null && (
          <p className="muted small" data-testid="buyer-account">
            From <span className="mono break">{props.account}</span>
          </p>
        )}
        {props.busy !== null && <p className="step">{props.busy}</p>}
        {props.error !== null && (
          <Notice kind="error" testId="pay-error">
            <ErrorText message={props.error.message} detail={props.error.detail} />
          </Notice>
        )}
      </section>
      <QrPanel uri={eip681(payable)} amount={due} payTo={payable.payTo} />
    </>
  );
}
