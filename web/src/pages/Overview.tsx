import { receipts, type Receipt } from '../lib/api.ts';
import { formatCents, usdToCents } from '../lib/decimal.ts';
import { startOfToday } from '../lib/format.ts';
import { useLoad } from '../lib/hooks.ts';
import { Button, ButtonLink, ErrorNote, Loading, Notice, PageHeader } from '../components/ui.tsx';
import { ReceiptTable } from '../components/ReceiptTable.tsx';

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
            <Button onClick={reload}>Refresh</Button>
            <ButtonLink to="terminal" variant="primary">
              New sale
            </ButtonLink>
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
      ) : (
        <ReceiptTable list={today} timeOnly empty="No receipts yet today. Ring up a sale on the terminal or create an order." />
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
