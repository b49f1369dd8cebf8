import type { CreatedReceipt } from '../lib/api.ts';
import { formatCents, usdToCents } from '../lib/decimal.ts';
import { Button, ReceiptLink, StatusBadge } from './ui.tsx';
import { LineItems } from './ReceiptTable.tsx';
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
        <LineItems lines={r.lineItems} total={formatCents(usdToCents(r.totalUsd))} totalTestId="created-total" />
        <p className="small">
          Receipt <ReceiptLink id={r.receiptId} />
        </p>
        <PaymentLink
          receiptId={r.receiptId}
          url={r.paymentUrl}
          note="The buyer pays in USDC from any wallet at this link, or by scanning the code. The receipt's page shows both again while it is unpaid."
        />
      </div>
      {props.onNext !== undefined && (
        <Button variant="primary" onClick={props.onNext}>
          {props.nextLabel ?? 'Next'}
        </Button>
      )}
    </div>
  );
}
