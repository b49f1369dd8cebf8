import { useState } from 'react';
import { receipts, receiptsCsvUrl, rejectedWrites, RECEIPT_STATUSES, type Receipt, type RejectedWrite } from '../lib/api.ts';
import { usdToCents } from '../lib/decimal.ts';
import { statusLabel } from '../lib/format.ts';
import { useLoad } from '../lib/hooks.ts';
import { Button, ButtonLink, buttonClass, ErrorNote, Field, Loading, Notice, PageHeader } from '../components/ui.tsx';
import { ReceiptTable } from '../components/ReceiptTable.tsx';

/** Not a status: a receipt whose refunds are above 0 and below its total keeps its status (DESIGN.md, "Receipt states"). */
const PARTLY_REFUNDED = 'partly_refunded';

function isPartlyRefunded(r: Pick<Receipt, 'refundedUsd' | 'totalUsd'>): boolean {
  return r.refundedUsd > 0 && usdToCents(r.refundedUsd) < usdToCents(r.totalUsd);
}

function matchesStatus(r: Receipt, status: string): boolean {
  if (status === '') return true;
  if (status === PARTLY_REFUNDED) return isPartlyRefunded(r);
  return r.status === status;
}

export function ReceiptList() {
  const { data, error, loading, reload } = useLoad(() => receipts.list());
  const [status, setStatus] = useState('');
  const [query, setQuery] = useState('');
  const q = query.trim().toLowerCase();
  const all = data?.receipts ?? [];
  const shown = all.filter(
    (r) =>
      matchesStatus(r, status) &&
      (q === '' || r.receiptId.toLowerCase().includes(q) || r.lineItems.some((l) => l.label.toLowerCase().includes(q))),
  );
  return (
    <section>
      <PageHeader
        title="Receipts"
        subtitle="Your latest 200 receipts."
        actions={
          <>
            <Button onClick={reload}>Refresh</Button>
            {/* Every receipt, not only the latest 200; the status filter applies when it is a status. */}
            <a className={buttonClass({})} href={receiptsCsvUrl({ status: status === PARTLY_REFUNDED ? '' : status })} download data-testid="receipts-csv">
              Export CSV
            </a>
            <ButtonLink to="receipts/new" variant="primary">
              New order
            </ButtonLink>
          </>
        }
      />
      <div className="filters">
        <Field label="Search">
          {(id) => <input id={id} type="search" name="q" placeholder="Receipt id or item" value={query} onChange={(e) => setQuery(e.target.value)} />}
        </Field>
        <Field label="Status">
          {(id) => (
            <select id={id} name="status" value={status} onChange={(e) => setStatus(e.target.value)}>
              <option value="">All statuses</option>
              {RECEIPT_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {statusLabel(s)}
                </option>
              ))}
              <option value={PARTLY_REFUNDED}>Partly refunded, any status</option>
            </select>
          )}
        </Field>
      </div>
      <ErrorNote message={error} />
      {data?.degraded && <Notice kind="warn">The database is unavailable; the list may be incomplete.</Notice>}
      <RejectedWrites />
      {loading && data === null ? (
        <Loading what="receipts" />
      ) : (
        <>
          {shown.length > 0 && (
            <p className="muted small">
              {shown.length} of {all.length}
            </p>
          )}
          <ReceiptTable list={shown} refunds empty={all.length === 0 ? 'No receipts yet.' : 'No receipt matches.'} />
        </>
      )}
    </section>
  );
}

/** What the reason's leading code means to a shop owner. */
function rejectionInWords(w: RejectedWrite): string {
  const code = w.reason.split(':')[0];
  if (code === 'conflict') return `Receipt ${w.receiptId ?? ''} was created twice with different contents; the first one to arrive was kept.`;
  if (code === 'receipt_not_found') return `A tracking status for receipt ${w.receiptId ?? ''} arrived, but that receipt never did.`;
  return w.reason;
}

/**
 * Writes this service accepted while its database was away that could never be applied once it
 * was back: shown here rather than dropped (they are also sent to webhooks as write.rejected).
 */
function RejectedWrites() {
  const { data } = useLoad(() => rejectedWrites.list());
  const list = data?.writes ?? [];
  if (list.length === 0) return null;
  return (
    <Notice kind="warn">
      <div data-testid="rejected-writes">
        <p>
          {list.length === 1 ? 'One request' : `${list.length} requests`} accepted during a database outage could not be applied
          afterwards:
        </p>
        <ul>
          {list.map((w) => (
            <li key={w.writeId}>
              {rejectionInWords(w)} <span className="muted small">(accepted {new Date(w.acknowledgedAt).toLocaleString()})</span>
            </li>
          ))}
        </ul>
      </div>
    </Notice>
  );
}
