import { receipts, type Receipt } from '../lib/api.ts';
import { formatCents, usdToCents } from '../lib/decimal.ts';
import { formatTime, startOfToday } from '../lib/format.ts';
import { useLoad } from '../lib/hooks.ts';
import { ErrorNote, Link, Loading, Notice, PageHeader, StatusBadge } from '../components/ui.tsx';

const PAID = new Set(['tx_mined', 'recipient_validated', 'completed']);

export function summarize(list: Receipt[]) {
  let totalCents = 0;
  let paidCents = 0;
  let open = 0;
  for (const r of list) {
    const cents = usdToCents(r.totalUsd);
    totalCents += cents;
    if (PAID.has(r.status)) paidCents += cents;
    else if (r.status !== 'failed' && !r.status.startsWith('refund')) open += 1;
  }
  return { count: list.length, totalCents, paidCents, open };
}

export function Overview() {
  const { data, error, loading, reload } = useLoad(() => receipts.list());
  const today = (data?.receipts ?? []).filter((r) => r.createdAt >= startOfToday());
  const s = summarize(today);
  return (
    <section>
      <PageHeader
        title="Today"
        subtitle={new Date().toLocaleDateString(undefined, { weekday: 'long', month: 'long', day: 'numeric' })}
        actions={
          <>
            <button type="button" className="btn" onClick={reload}>
              Refresh
            </button>
            <Link to="terminal" className="btn btn-primary">
              New sale
            </Link>
          </>
        }
      />
      <ErrorNote message={error} />
      {data?.degraded && <Notice kind="warn">The database is unavailable; the list may be incomplete.</Notice>}
      <div className="stats" data-testid="today-stats">
        <Stat label="Receipts" value={String(s.count)} />
        <Stat label="Total" value={formatCents(s.totalCents)} testId="today-total" />
        <Stat label="Paid" value={formatCents(s.paidCents)} />
        <Stat label="Awaiting payment" value={String(s.open)} />
      </div>
      <h2>Today&apos;s receipts</h2>
      {loading && data === null ? (
        <Loading what="receipts" />
      ) : today.length === 0 ? (
        <p className="empty">No receipts yet today. Ring up a sale on the terminal or create an order.</p>
      ) : (
        <ReceiptTable list={today} timeOnly />
      )}
    </section>
  );
}

function Stat(props: { label: string; value: string; testId?: string }) {
  return (
    <div className="stat">
      <span className="stat-label">{props.label}</span>
      <span className="stat-value" data-testid={props.testId}>
        {props.value}
      </span>
    </div>
  );
}

export function ReceiptTable(props: { list: Receipt[]; timeOnly?: boolean }) {
  return (
    <table className="table table-cards">
      <thead>
        <tr>
          <th>{props.timeOnly ? 'Time' : 'Created'}</th>
          <th>Receipt</th>
          <th>Items</th>
          <th>Status</th>
          <th className="num">Total</th>
        </tr>
      </thead>
      <tbody>
        {props.list.map((r) => (
          <tr key={r.receiptId} data-testid="receipt-row">
            <td data-label={props.timeOnly ? 'Time' : 'Created'}>
              {props.timeOnly ? formatTime(r.createdAt) : new Date(r.createdAt).toLocaleString()}
            </td>
            <td data-label="Receipt">
              <Link to={`receipts/${encodeURIComponent(r.receiptId)}`} className="mono">
                {r.receiptId}
              </Link>
            </td>
            <td data-label="Items" className="truncate">
              {r.lineItems.map((l) => l.label).join(', ')}
            </td>
            <td data-label="Status">
              <StatusBadge status={r.status} />
            </td>
            <td data-label="Total" className="num">
              {formatCents(usdToCents(r.totalUsd))}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
