import { useState } from 'react';
import { receipts, RECEIPT_STATUSES } from '../lib/api.ts';
import { statusLabel } from '../lib/format.ts';
import { useLoad } from '../lib/hooks.ts';
import { ErrorNote, Field, Link, Loading, Notice, PageHeader } from '../components/ui.tsx';
import { ReceiptTable } from './Overview.tsx';

export function ReceiptList() {
  const { data, error, loading, reload } = useLoad(() => receipts.list());
  const [status, setStatus] = useState('');
  const [query, setQuery] = useState('');
  const q = query.trim().toLowerCase();
  const all = data?.receipts ?? [];
  const shown = all.filter(
    (r) =>
      (status === '' || r.status === status) &&
      (q === '' || r.receiptId.toLowerCase().includes(q) || r.lineItems.some((l) => l.label.toLowerCase().includes(q))),
  );
  return (
    <section>
      <PageHeader
        title="Receipts"
        subtitle="Your latest 200 receipts."
        actions={
          <>
            <button type="button" className="btn" onClick={reload}>
              Refresh
            </button>
            <Link to="receipts/new" className="btn btn-primary">
              New order
            </Link>
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
            </select>
          )}
        </Field>
      </div>
      <ErrorNote message={error} />
      {data?.degraded && <Notice kind="warn">The database is unavailable; the list may be incomplete.</Notice>}
      {loading && data === null ? (
        <Loading what="receipts" />
      ) : shown.length === 0 ? (
        <p className="empty">{all.length === 0 ? 'No receipts yet.' : 'No receipt matches.'}</p>
      ) : (
        <>
          <p className="muted small">
            {shown.length} of {all.length}
          </p>
          <ReceiptTable list={shown} />
        </>
      )}
    </section>
  );
}
