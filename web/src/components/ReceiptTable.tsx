/** Receipts as tables: a list of receipts (the overview's and the receipts page's), and a receipt's own lines. */
import type { ReactNode } from 'react';
import type { Receipt } from '../lib/api.ts';
import { formatCents, usdToCents } from '../lib/decimal.ts';
import { formatTime } from '../lib/format.ts';
import { Badge, StatusBadge } from './Badge.tsx';
import { receiptPath } from './Link.tsx';
import { Table, type Column } from './Table.tsx';

/** "Partly refunded" beside a status the refunds did not change; a full refund shows as the status itself. */
export function RefundBadge(props: { receipt: { status: string; totalUsd: number; refundedUsd: number } }) {
  const { status, totalUsd, refundedUsd } = props.receipt;
  // A refund_* status already says it in words (statusLabel).
  if (refundedUsd <= 0 || status === 'refunded' || status.startsWith('refund_')) return null;
  return (
    <Badge tone="warn" testId="refund-badge">
      {usdToCents(refundedUsd) >= usdToCents(totalUsd) ? 'Refunded' : 'Partly refunded'}
    </Badge>
  );
}

/**
 * Receipts, newest first as given, each linking to its page. `timeOnly`: today's list, where the
 * date goes without saying; `refunds`: the refunds beside each status.
 */
export function ReceiptTable(props: { list: readonly Receipt[]; timeOnly?: boolean; refunds?: boolean; empty?: ReactNode }) {
  const columns: Column<Receipt>[] = [
    props.timeOnly
      ? { header: 'Time', cell: (r) => formatTime(r.createdAt) }
      : { header: 'Created', cell: (r) => new Date(r.createdAt).toLocaleString() },
    { header: 'Receipt', cell: (r) => r.receiptId, link: (r) => receiptPath(r.receiptId) },
    { header: 'Items', className: 'truncate', cell: (r) => r.lineItems.map((l) => l.label).join(', ') },
    {
      header: 'Status',
      cell: (r) =>
        props.refunds ? (
          <span>
            <StatusBadge status={r.status} />
            <RefundBadge receipt={r} />
          </span>
        ) : (
          <StatusBadge status={r.status} />
        ),
    },
    { header: 'Total', num: true, cell: (r) => formatCents(usdToCents(r.totalUsd)) },
  ];
  return <Table columns={columns} rows={props.list} rowKey={(r) => r.receiptId} rowData={() => ({ 'data-testid': 'receipt-row' })} empty={props.empty} />;
}

interface Line {
  label: string;
  priceUsd: number;
  qty?: number;
}

const LINE_COLUMNS: Column<Line>[] = [
  {
    header: 'Item',
    cell: (l) => (
      <>
        {l.label}
        {l.qty !== undefined && l.qty !== 1 && <span className="muted"> × {l.qty}</span>}
      </>
    ),
  },
  { header: 'Amount', num: true, cell: (l) => formatCents(usdToCents(l.priceUsd) * (l.qty ?? 1)) },
];

/** A receipt's lines and its total (`totalTestId` marks the total's cell). */
export function LineItems(props: { lines: readonly Line[]; total: ReactNode; totalTestId: string }) {
  return (
    <Table
      columns={LINE_COLUMNS}
      rows={props.lines}
      rowKey={(_, i) => i}
      head={false}
      cards={false}
      className="lines"
      foot={
        <>
          <th>Total</th>
          <th className="num" data-testid={props.totalTestId}>
            {props.total}
          </th>
        </>
      }
    />
  );
}
