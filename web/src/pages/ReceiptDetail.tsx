/**
 * A receipt: its payment link and QR code while it is unpaid, its items, status history and
 * refunds. A refund is sent from the merchant's browser wallet (a transfer of the receipt's token
 * to the buyer, then recorded with its hash, which the server checks on the chain), or recorded
 * without a transaction (unverified). Showing this page never records anything on the receipt.
 */
import { useState, type FormEvent } from 'react';
import { receipts, type ReceiptDetail, type RefundToken, type Session } from '../lib/api.ts';
import { centsToUsd, formatCents, fractionToPercent, parseUsd, shiftDecimal, usdToCents } from '../lib/decimal.ts';
import { ADDRESS, formatDateTime, shortAddress, sourceLabel, TX_HASH } from '../lib/format.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { messageOf } from '../lib/http.ts';
import { chainName, connect, ensureChain, injectedWallet, waitForMined, WalletError } from '../lib/wallet.ts';
import { Badge, Button, ButtonLink, ErrorNote, Field, FormActions, Loading, Notice, PageHeader, StatusBadge, Table, type Column } from '../components/ui.tsx';
import { LineItems, RefundBadge } from '../components/ReceiptTable.tsx';
import { Countdown, useNow } from '../components/Countdown.tsx';
import { PaymentLink } from '../components/PaymentLink.tsx';
import { sendTransfer } from '../pay/wallet-pay.ts';
import { ReceiptSweep } from '../components/ReceiptSweep.tsx';

/** The statuses of a receipt that nothing has been paid to yet, whose link the buyer can still use. */
const OPEN_STATUSES = new Set(['pending', 'generated', 'link_opened', 'buyer_logged_in', 'checkout_initialized']);

type Refund = ReceiptDetail['refunds'][number];

const REFUND_COLUMNS: Column<Refund>[] = [
  {
    header: 'Refund',
    cell: (x) => (
      <>
        {formatDateTime(x.createdAt)}
        <VerificationBadge verification={x.verification} />
        <div className="muted small">
          to {shortAddress(x.buyer)}
          {x.txHash !== null && (
            <>
              {' '}· transaction{' '}
              <span className="mono" title={x.txHash}>
                {shortAddress(x.txHash)}
              </span>
            </>
          )}
        </div>
      </>
    ),
  },
  { header: 'Amount', num: true, cell: (x) => formatCents(usdToCents(x.usd)) },
];

export function ReceiptView(props: { id: string; session: Session }) {
  const loaded = useLoad(() => Promise.all([receipts.get(props.id), receipts.refunds(props.id)]), [props.id]);
  if (loaded.data === null) {
    return (
      <section>
        <PageHeader title={`Receipt ${props.id}`} actions={<ButtonLink to="receipts">All receipts</ButtonLink>} />
        <ErrorNote message={loaded.error} />
        {loaded.loading && <Loading what="receipt" />}
      </section>
    );
  }
  const [receipt, { token }] = loaded.data;
  return <Detail receipt={receipt} token={token} session={props.session} onChanged={loaded.reload} />;
}

function Detail(props: { receipt: ReceiptDetail; token: RefundToken | null; session: Session; onChanged: () => void }) {
  const r = props.receipt;
  const [refunded, setRefunded] = useState<string | null>(null);
  const totalCents = usdToCents(r.totalUsd);
  const refundedCents = usdToCents(r.refundedUsd);
  const symbol = props.token?.symbol ?? 'USDC';
  const arrived = arrivedCents(r.amountPaid, props.token?.decimals ?? 6);
  const surplusCents = arrived > totalCents ? arrived - totalCents : 0;
  // Refunds may reach what the receipt took: its total, or what arrived when more arrived.
  const capCents = Math.max(totalCents, arrived);
  return (
    <section>
      <PageHeader
        title={`Receipt ${r.receiptId}`}
        subtitle={
          <>
            {formatDateTime(r.createdAt)} · <StatusBadge status={r.status} />
            <RefundBadge receipt={r} />
          </>
        }
        actions={<ButtonLink to="receipts">All receipts</ButtonLink>}
      />
      <div className="detail-grid">
        <OpenPaymentLink receipt={r} />
        <div className="card">
          <h2>Items</h2>
          <LineItems lines={r.lineItems} total={`${formatCents(totalCents)} ${r.currency}`} totalTestId="receipt-total" />
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
            {r.amountPaid !== '0' && (
              <>
                <dt>Arrived</dt>
                <dd data-testid="receipt-arrived">
                  {formatCents(arrived)} {symbol}
                </dd>
              </>
            )}
            {surplusCents > 0 && (
              <>
                <dt>Surplus</dt>
                <dd data-testid="receipt-surplus">
                  {formatCents(surplusCents)} {symbol} more than the total arrived; it can be refunded
                </dd>
              </>
            )}
            {r.payer !== null && (
              <>
                <dt>Paid by</dt>
                <dd className="mono break" data-testid="receipt-payer">
                  {r.payer}
                </dd>
              </>
            )}
          </dl>
        </div>
        {props.token !== null && <ReceiptSweep receiptId={r.receiptId} token={props.token} />}
        <div className="card">
          <h2>Status history</h2>
          <ol className="timeline" data-testid="status-history">
            {r.statusHistory.map((h, i) => (
              <li key={i} data-testid="history-entry" data-status={h.status}>
                <StatusBadge status={h.status} count={h.count} />
                <span className="muted small" title={h.count !== undefined && h.count > 1 ? `Recorded ${h.count} times; the time is the first` : undefined}>
                  {formatDateTime(h.at)} · {sourceLabel(h.source)}
                </span>
              </li>
            ))}
          </ol>
        </div>
        <div className="card">
          <h2>Refunds</h2>
          <Table
            columns={REFUND_COLUMNS}
            rows={r.refunds}
            rowKey={(x) => x.id}
            rowData={(x) => ({ 'data-testid': 'refund-row', 'data-verified': x.verified, 'data-verification': x.verification })}
            head={false}
            cards={false}
            empty="No refunds."
            testId="refund-list"
          />
          {refunded !== null && <Notice kind="ok">{refunded}</Notice>}
          {/* Remounted after each refund, so the amount starts again from what remains. */}
          <RefundForm
            key={r.refunds.length}
            receipt={r}
            wallet={props.session.wallet}
            token={props.token}
            defaultBuyer={r.refunds.at(-1)?.buyer ?? r.payer ?? ''}
            remainingCents={capCents - refundedCents}
            capCents={capCents}
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

/**
 * The payment link and QR code again, while the buyer can still use them: nothing paid yet and
 * not expired (the server decides expiry; past the time the card goes away).
 */
function OpenPaymentLink(props: { receipt: ReceiptDetail }) {
  const r = props.receipt;
  const open = OPEN_STATUSES.has(r.status) && r.exception === null && r.paymentUrl !== undefined;
  const now = useNow(open);
  if (!open || r.paymentUrl === undefined || (r.expiresAt !== undefined && now >= r.expiresAt)) return null;
  return (
    <div className="card detail-wide" data-testid="receipt-payment-link">
      <h2>Waiting for payment</h2>
      {r.expiresAt !== undefined && <Countdown expiresAt={r.expiresAt} />}
      <PaymentLink receiptId={r.receiptId} url={r.paymentUrl} />
    </div>
  );
}

/** How far a refund's transfer is proven on the chain (DESIGN "Refunds"). */
function VerificationBadge(props: { verification: Refund['verification'] }) {
  switch (props.verification) {
    case 'verified':
      return <Badge tone="ok">Verified</Badge>;
    case 'confirming':
      return (
        <Badge tone="pending" title="Its transfer is on the chain; it is verified once enough blocks follow it">
          Confirming
        </Badge>
      );
    case 'removed':
      return (
        <Badge tone="bad" title="A chain reorganisation removed its transfer: the buyer may not have the money. It is verified again if the transfer is mined again">
          Transfer removed
        </Badge>
      );
    default:
      return <Badge tone="muted">Unverified</Badge>;
  }
}

/** What arrived (token base units) in cents, floored: refunds are recorded in cents. */
function arrivedCents(amountPaid: string, decimals: number): number {
  const units = BigInt(amountPaid);
  return Number(decimals >= 2 ? units / 10n ** BigInt(decimals - 2) : units * 10n ** BigInt(2 - decimals));
}

function refundedMessage(cents: number, capCents: number, res: { refundedUsd: number; verification: Refund['verification'] }): string {
  const left = capCents - usdToCents(res.refundedUsd);
  const verified =
    res.verification === 'verified'
      ? ' The transfer was verified on the chain.'
      : res.verification === 'confirming'
        ? ' The transfer is on the chain; it is verified once enough blocks follow it.'
        : '';
  return left <= 0
    ? `Refunded ${formatCents(cents)}; the receipt is fully refunded.${verified}`
    : `Refunded ${formatCents(cents)}; ${formatCents(usdToCents(res.refundedUsd))} refunded in all, ${formatCents(left)} remains.${verified}`;
}

function RefundForm(props: {
  receipt: ReceiptDetail;
  wallet: string;
  token: RefundToken | null;
  defaultBuyer: string;
  remainingCents: number;
  /** The most all refunds may add up to: the total, or what arrived when more arrived. */
  capCents: number;
  onDone: (message: string) => void;
}) {
  const [buyer, setBuyer] = useState(props.defaultBuyer);
  const [amount, setAmount] = useState(() => (props.remainingCents > 0 ? formatCents(props.remainingCents).slice(1).replace(/,/g, '') : ''));
  const [txHash, setTxHash] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [progress, setProgress] = useState<string | null>(null);
  const submit = useSubmit();
  const { payer } = props.receipt;

  if (props.remainingCents <= 0) return <Notice kind="info">Fully refunded.</Notice>;

  /** The buyer and the amount, or null with the errors shown; the transaction field only when it is used. */
  function checked(withTxHash: boolean): { buyer: string; cents: number } | null {
    const errs: Record<string, string> = {};
    if (!ADDRESS.test(buyer.trim())) errs.buyer = "The buyer's wallet: 0x and 40 hex digits";
    const cents = parseUsd(amount);
    if (cents === null || cents === 0) errs.amount = 'An amount above 0, at most two decimals';
    else if (cents > props.remainingCents) errs.amount = `At most ${formatCents(props.remainingCents)} remains to refund`;
    if (withTxHash && txHash.trim() !== '' && !TX_HASH.test(txHash.trim())) errs.txHash = '0x and 64 hex digits';
    setErrors(errs);
    return Object.keys(errs).length > 0 || cents === null ? null : { buyer: buyer.trim(), cents };
  }

  async function record(refund: { buyer: string; cents: number }, hash: string | undefined) {
    const body = { receiptId: props.receipt.receiptId, wallet: props.wallet, buyer: refund.buyer, usd: centsToUsd(refund.cents), ...(hash === undefined ? {} : { txHash: hash }) };
    const res = await receipts.refund(body);
    props.onDone(refundedMessage(refund.cents, props.capCents, res));
  }

  const onRecord = (e: FormEvent) => {
    e.preventDefault();
    const refund = checked(true);
    if (refund === null) return;
    void submit.run(() => record(refund, txHash.trim() === '' ? undefined : txHash.trim()));
  };

  /** Sends transfer(buyer, amount) of the token from the browser wallet, then records the refund with its hash. */
  const onSend = (token: RefundToken) => {
    const refund = checked(false);
    if (refund === null) return;
    void submit.run(async () => {
      try {
        const wallet = injectedWallet();
        if (wallet === null) throw new WalletError('No browser wallet was found. Send the refund from any wallet, then record it with its transaction.');
        setProgress('Connect your wallet…');
        const from = await connect(wallet);
        setProgress(`Switching your wallet to ${chainName(token.chainId)}…`);
        await ensureChain(wallet, token.chainId);
        const units = BigInt(refund.cents) * 10n ** BigInt(token.decimals - 2);
        setProgress(`Confirm the transfer of ${shiftDecimal(units.toString(), -token.decimals)} ${token.symbol} in your wallet…`);
        const hash = await sendTransfer(wallet, from, {
          chainId: token.chainId,
          tokenAddress: token.address,
          tokenSymbol: token.symbol,
          tokenDecimals: token.decimals,
          payTo: refund.buyer,
          due: units.toString(),
        }, 'refund');
        // Kept in the form: should recording fail, "Record refund with this transaction" retries it.
        setTxHash(hash);
        setProgress('Waiting for the transaction to be mined…');
        await waitForMined(wallet, hash);
        setProgress('Recording the refund…');
        await record(refund, hash).catch((err: unknown) => {
          throw new Error(`The refund was sent (${hash}) but not recorded: ${messageOf(err)}. Record it with this transaction to try again.`);
        });
      } finally {
        setProgress(null);
      }
    });
  };

  const token = props.token;
  return (
    <form className="form refund-form" onSubmit={onRecord} noValidate data-testid="refund-form">
      <h3>Refund</h3>
      <p className="muted small">
        Send the refund from your wallet, or record one you sent. {formatCents(props.remainingCents)} can still be refunded.
      </p>
      <Field
        label="Buyer wallet"
        error={errors.buyer}
        hint={payer === null ? 'Ask the buyer for the address to refund.' : buyer.trim().toLowerCase() === payer ? 'The address that paid this receipt.' : undefined}
      >
        {(id, invalid) => <input id={id} name="buyer" className="mono" placeholder="0x…" value={buyer} aria-invalid={invalid} onChange={(e) => setBuyer(e.target.value)} />}
      </Field>
      {payer !== null && (
        <Notice kind="warn" small role="note" testId="payer-warning">
          The address that paid may belong to an exchange or a smart wallet, where a refund can be lost or land in
          someone else&apos;s account. Confirm the refund address with the buyer before sending.
        </Notice>
      )}
      <Field label="Amount (USD)" error={errors.amount}>
        {(id, invalid) => <input id={id} name="usd" inputMode="decimal" value={amount} aria-invalid={invalid} onChange={(e) => setAmount(e.target.value)} />}
      </Field>
      <Field label="Refund transaction (optional)" error={errors.txHash} hint="Sent from another wallet? Its transaction is checked on the chain.">
        {(id, invalid) => <input id={id} name="txHash" className="mono" placeholder="0x…" value={txHash} aria-invalid={invalid} onChange={(e) => setTxHash(e.target.value)} />}
      </Field>
      {progress !== null && <Notice kind="info">{progress}</Notice>}
      <ErrorNote message={submit.error} detail={submit.errorDetail} testId="refund-error" />
      {token === null && <Notice kind="info">This server is not connected to a chain: refunds can only be recorded, unverified.</Notice>}
      <FormActions>
        <Button type="submit" disabled={submit.busy}>
          {txHash.trim() === '' ? 'Record refund without a transaction' : 'Record refund with this transaction'}
        </Button>
        {token !== null && (
          <Button variant="danger" disabled={submit.busy} onClick={() => onSend(token)}>
            {submit.busy && progress !== null ? 'Sending…' : 'Send refund from my wallet'}
          </Button>
        )}
      </FormActions>
    </form>
  );
}
