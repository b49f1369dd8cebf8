import { useState, type FormEvent } from 'react';
import { receipts, type ReceiptDetail, type Refund, type Session } from '../lib/api.ts';
import { centsToUsd, formatCents, fractionToPercent, parseUsd, usdToCents } from '../lib/decimal.ts';
import { ADDRESS, formatDateTime, shortAddress, statusLabel, TX_HASH } from '../lib/format.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { ErrorNote, Field, Link, Loading, Notice, PageHeader, StatusBadge } from '../components/ui.tsx';

export function ReceiptView(props: { id: string; session: Session }) {
  const loaded = useLoad(() => Promise.all([receipts.get(props.id), receipts.refunds(props.id)]), [props.id]);
  if (loaded.data === null) {
    return (
      <section>
        <PageHeader title={`Receipt ${props.id}`} actions={<Link to="receipts" className="btn">All receipts</Link>} />
        <ErrorNote message={loaded.error} />
        {loaded.loading && <Loading what="receipt" />}
      </section>
    );
  }
  const [receipt, { refunds }] = loaded.data;
  return <Detail receipt={receipt} refunds={refunds} session={props.session} onChanged={loaded.reload} />;
}

function Detail(props: { receipt: ReceiptDetail; refunds: Refund[]; session: Session; onChanged: () => void }) {
  const r = props.receipt;
  const [refunded, setRefunded] = useState<string | null>(null);
  const totalCents = usdToCents(r.totalUsd);
  const refundedCents = props.refunds.reduce((sum, x) => sum + usdToCents(x.usd), 0);
  return (
    <section>
      <PageHeader
        title={`Receipt ${r.receiptId}`}
        subtitle={
          <>
            {formatDateTime(r.createdAt)} · <StatusBadge status={r.status} />
          </>
        }
        actions={<Link to="receipts" className="btn">All receipts</Link>}
      />
      <div className="detail-grid">
        <div className="card">
          <h2>Items</h2>
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
                <th className="num" data-testid="receipt-total">
                  {formatCents(totalCents)} {r.currency}
                </th>
              </tr>
            </tfoot>
          </table>
          <dl className="facts">
            <dt>Tax</dt>
            <dd>
              {r.jurisdictionCode ?? 'none'}
              {r.taxRate > 0 && ` · ${fractionToPercent(r.taxRate)}%`}
              {r.taxComponents.length > 0 && ` (${r.taxComponents.join(', ')})`}
            </dd>
            {r.transactionHash !== undefined && (
              <>
                <dt>Transaction</dt>
                <dd className="mono break">{r.transactionHash}</dd>
              </>
            )}
          </dl>
        </div>
        <div className="card">
          <h2>Status history</h2>
          <ol className="timeline" data-testid="status-history">
            {r.statusHistory.map((h, i) => (
              <li key={i}>
                <StatusBadge status={h.status} />
                <span className="muted small">
                  {formatDateTime(h.at)} · {statusLabel(h.source)}
                </span>
              </li>
            ))}
          </ol>
        </div>
        <div className="card">
          <h2>Refunds</h2>
          {props.refunds.length === 0 ? (
            <p className="empty">No refunds.</p>
          ) : (
            <table className="table" data-testid="refund-list">
              <tbody>
                {props.refunds.map((x) => (
                  <tr key={x.id}>
                    <td>
                      {formatDateTime(x.createdAt)}
                      <div className="muted small">to {shortAddress(x.buyer)}</div>
                    </td>
                    <td className="num">{formatCents(usdToCents(x.usd))}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {refunded !== null && <Notice kind="ok">{refunded}</Notice>}
          {/* Remounted after each refund, so the amount starts again from what remains. */}
          <RefundForm
            key={props.refunds.length}
            receipt={r}
            wallet={props.session.wallet}
            lastBuyer={props.refunds.at(-1)?.buyer ?? ''}
            remainingCents={totalCents - refundedCents}
            onDone={(message) => {
              setRefunded(message);
              props.onChanged();
            }}
          />
        </div>
      </div>
    </section>
  );
}

function RefundForm(props: {
  receipt: ReceiptDetail;
  wallet: string;
  lastBuyer: string;
  remainingCents: number;
  onDone: (message: string) => void;
}) {
  const [buyer, setBuyer] = useState(props.lastBuyer);
  const [amount, setAmount] = useState(() => (props.remainingCents > 0 ? formatCents(props.remainingCents).slice(1).replace(/,/g, '') : ''));
  const [txHash, setTxHash] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const submit = useSubmit();

  if (props.remainingCents <= 0) return <Notice kind="info">Fully refunded.</Notice>;

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const errs: Record<string, string> = {};
    if (!ADDRESS.test(buyer.trim())) errs.buyer = "The buyer's wallet: 0x and 40 hex digits";
    const cents = parseUsd(amount);
    if (cents === null || cents === 0) errs.amount = 'An amount above 0, at most two decimals';
    else if (cents > props.remainingCents) errs.amount = `At most ${formatCents(props.remainingCents)} remains to refund`;
    if (txHash.trim() !== '' && !TX_HASH.test(txHash.trim())) errs.txHash = '0x and 64 hex digits';
    setErrors(errs);
    if (Object.keys(errs).length > 0 || cents === null) return;
    void submit.run(async () => {
      const body = { receiptId: props.receipt.receiptId, wallet: props.wallet, buyer: buyer.trim(), usd: centsToUsd(cents), ...(txHash.trim() === '' ? {} : { txHash: txHash.trim() }) };
      const res = await receipts.refund(body);
      const left = usdToCents(props.receipt.totalUsd) - usdToCents(res.refundedUsd);
      props.onDone(
        left === 0
          ? `Refunded ${formatCents(cents)}; the receipt is fully refunded.`
          : `Refunded ${formatCents(cents)}; ${formatCents(usdToCents(res.refundedUsd))} refunded in all, ${formatCents(left)} remains.`,
      );
    });
  };

  return (
    <form className="form refund-form" onSubmit={onSubmit} noValidate data-testid="refund-form">
      <h3>Refund</h3>
      <p className="muted small">Record a refund you sent to the buyer. {formatCents(props.remainingCents)} can still be refunded.</p>
      <Field label="Buyer wallet" error={errors.buyer}>
        {(id, invalid) => <input id={id} name="buyer" className="mono" placeholder="0x…" value={buyer} aria-invalid={invalid} onChange={(e) => setBuyer(e.target.value)} />}
      </Field>
      <Field label="Amount (USD)" error={errors.amount}>
        {(id, invalid) => <input id={id} name="usd" inputMode="decimal" value={amount} aria-invalid={invalid} onChange={(e) => setAmount(e.target.value)} />}
      </Field>
      <Field label="Refund transaction (optional)" error={errors.txHash}>
        {(id, invalid) => <input id={id} name="txHash" className="mono" placeholder="0x…" value={txHash} aria-invalid={invalid} onChange={(e) => setTxHash(e.target.value)} />}
      </Field>
      <ErrorNote message={submit.error} />
      <button type="submit" className="btn btn-danger" disabled={submit.busy}>
        {submit.busy ? 'Refunding…' : 'Record refund'}
      </button>
    </form>
  );
}
