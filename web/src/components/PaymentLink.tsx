import { CopyButton } from './ui.tsx';
import { QrCode } from './QrCode.tsx';

/**
 * A receipt's payment link as text with a copy button, and as a QR code the buyer scans. Shown
 * where the receipt is created and on its page while it is unpaid. It is a plain text link, not an
 * anchor: the payment page records "Link opened" when a buyer opens it, and a merchant checking
 * the link should not be counted as one by a stray click.
 */
export function PaymentLink(props: { receiptId: string; url: string; note?: string }) {
  return (
    <div className="paylink-block" data-testid="payment-link">
      <div>
        <div className="paylink">
          <span className="secret-label">Payment link</span>
          <code className="secret-value" data-testid="payment-url">
            {props.url}
          </code>
          <CopyButton text={props.url} label="Copy link" />
        </div>
        <p className="muted small">{props.note ?? 'The buyer pays in USDC from any wallet at this link, or by scanning the code.'}</p>
      </div>
      <figure className="qr-figure">
        <QrCode text={props.url} label={`QR code of the payment link for receipt ${props.receiptId}`} />
        <figcaption className="muted small">Scan to pay</figcaption>
      </figure>
    </div>
  );
}
