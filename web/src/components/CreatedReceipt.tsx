import type { CreatedReceipt } from '../lib/api.ts';
import { formatCents, usdToCents } from '../lib/decimal.ts';
import { Link, StatusBadge } from './ui.tsx';
import { LiveStatus, useLiveReceipt } from './LiveReceipt.tsx';
import { PaymentLink } from './PaymentLink.tsx';

/**
 * A receipt just created: its lines, the payment link as text and QR code (also on the receipt's
 * page while it is unpaid), and its payment followed live until it is paid (the reading stops when
 * the card closes).
 */
export function CreatedReceiptCard(props: { receipt: CreatedReceipt; title: string; onNext?: () => void; nextLabel?: string }) {
  const r = props.receipt;
  const live = useLiveReceipt(r.receiptId);
  const status = live.payment?.status ?? r.status;
  return (
    <div className="card created" data-testid="created-receipt">
      <div className="created-head">
        <h2>{status === 'completed' ? 'Payment complete' : props.title}</h2>
        <StatusBadge status={status} />
      </div>
      <LiveStatus live={live} />
      <div className="created-body">
        <table className="table lines">
          <tbody>
            {r.lineItems.map((l, i) => (
              <tr key={i}>
                <td>
                  {l.label}
                  {l.qty !== undefined && l.qty !== 1 && <span className="muted"> × {l.qty}</span>}
                </td>
                <td className="num">{formatCents(usdToCents(l.priceUsd) * (l.qty ?? 1))}</td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th>Total</th>
              <th className="num" data-testid="created-total">
                {formatCents(usdToCents(r.totalUsd))}
              </th>
            </tr>
          </tfoot>
        </table>
        <p className="small">
          Receipt{' '}
          <Link to={`receipts/${encodeURIComponent(r.receiptId)}`} className="mono">
            {r.receiptId}
          </Link>
        </p>
        <PaymentLink
          receiptId={r.receiptId}
          url={r.paymentUrl}
          note="The buyer pays in USDC from any wallet at this link, or by scanning the code. The receipt's page shows both again while it is unpaid."
        />
      </div>
      {props.onNext !== undefined && (
        <button type="button" className="btn btn-primary" onClick={props.onNext}>
          {props.nextLabel ?? 'Next'}
        </button>
      )}
    </div>
  );
}
