/**
 * The hosted payment page: what is being paid, a browser-wallet payment to the receipt's own
 * payment address, an EIP-681 QR code for phones, the time left, and the receipt's live status,
 * which it also posts to an allowed parent when framed.
 */
import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError, messageOf, newIdempotencyKey } from '../lib/http.ts';
import { payApi, payLinkFromLocation, type PaymentView, type TrackingStatus } from './api.ts';
import { postStatus } from './embed.ts';
import { Notice } from '../components/Notice.tsx';
import { Amounts, Overpaid, PayOffer, StatusPanel, Summary, tokenUnits } from './parts.tsx';
import { canOfferPayment, chainName, FINAL, IN_FLIGHT, isUnpaid, phaseOf } from './status.ts';
import { connect, ensureChain, errorParts, injectedWallet, sendTransfer, shortMessage, type Payable } from './wallet-pay.ts';

type Load = { kind: 'loading' } | { kind: 'not_found' } | { kind: 'error'; status: number; message: string } | { kind: 'ready'; view: PaymentView };
/** `paidBefore`: what the server counted when the transaction was sent; more than that means it arrived. */
type Step =
  | { kind: 'idle' }
  | { kind: 'busy'; what: string }
  | { kind: 'sent'; hash: string; paidBefore: string }
  | { kind: 'error'; message: string; detail: string | null };

const link = payLinkFromLocation(window.location);
/**
 * Every second while a payment is under way; every 3 s while the page waits (a QR-code payment is
 * still noticed quickly), 10 s in a hidden tab. The page's API is rate-limited per client
 * address, and buyers in one shop often share one.
 */
const POLL_ACTIVE_MS = 1000;
const POLL_IDLE_MS = 3000;
const POLL_HIDDEN_MS = 10_000;
/** After a 429, wait this long before asking again. */
const POLL_LIMITED_MS = 10_000;
async function track(status: TrackingStatus): Promise<void> {
  // Tracking helps the merchant see where buyers stop; it never blocks a payment.
  await payApi.track(link, status).catch((err: unknown) => console.warn(`tracking status ${status} was not recorded: ${messageOf(err)}`));
}

/**
 * Tells the service where to look sooner. Only a hint: the worker finds the transfer into the
 * payment address without it, so a refusal (at most 5 unresolved hints per receipt) is no error
 * for the buyer; a network hiccup is retried once.
 */
async function sendHint(hash: string): Promise<void> {
  // One hint, one key: the retry is the same request, not a second one.
  const key = newIdempotencyKey();
  for (let attempt = 1; ; attempt++) {
    try {
      await payApi.submit(link, hash, key);
      return;
    } catch (err) {
      const transient = err instanceof ApiError && (err.status === 0 || err.status >= 500);
      if (!transient || attempt >= 2) {
        console.warn(`the transaction hint was not accepted (the payment is still found on chain): ${messageOf(err)}`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

export function PayPage() {
  const [load, setLoad] = useState<Load>({ kind: 'loading' });
  const [step, setStep] = useState<Step>({ kind: 'idle' });
  const [account, setAccount] = useState<string | null>(null);
  const [hasWallet, setHasWallet] = useState(() => injectedWallet() !== null);
  const [walletAsked, setWalletAsked] = useState(false);
  const [offline, setOffline] = useState<string | null>(null);
  const opened = useRef(false);
  const posted = useRef<string | null>(null);
  /** Set once the buyer starts paying: from then on the status is read every second. */
  const active = useRef(false);

  const refresh = useCallback(async (): Promise<Load> => {
    let next: Load;
    try {
      next = { kind: 'ready', view: await payApi.get(link) };
      setOffline(null);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) next = { kind: 'not_found' };
      else {
        setOffline(messageOf(err));
        next = { kind: 'error', status: err instanceof ApiError ? err.status : 0, message: messageOf(err) };
      }
    }
    // A failed refresh keeps what is shown; the note above says the page is retrying.
    setLoad((prev) => (next.kind === 'error' && prev.kind === 'ready' ? prev : next));
    return next;
  }, []);

  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const loop = async () => {
      const next = await refresh();
      if (stopped || next.kind === 'not_found') return;
      if (next.kind === 'ready') {
        if (!opened.current && isUnpaid(next.view.status)) {
          opened.current = true;
          void track('link_opened');
        }
        // An expired receipt is still watched: money that arrives late is credited.
        if (FINAL.has(next.view.status)) return;
      }
      const inFlight = active.current || (next.kind === 'ready' && IN_FLIGHT.has(next.view.status));
      const delay =
        next.kind === 'error' && next.status === 429
          ? POLL_LIMITED_MS
          : document.hidden
            ? POLL_HIDDEN_MS
            : inFlight
              ? POLL_ACTIVE_MS
              : POLL_IDLE_MS;
      timer = window.setTimeout(() => void loop(), delay);
    };
    void loop();
    // Some wallets inject after the page has loaded.
    const walletArrived = () => setHasWallet(injectedWallet() !== null);
    window.addEventListener('ethereum#initialized', walletArrived);
    return () => {
      stopped = true;
      window.clearTimeout(timer);
      window.removeEventListener('ethereum#initialized', walletArrived);
    };
  }, [refresh]);

  const view = load.kind === 'ready' ? load.view : null;
  useEffect(() => {
    if (view === null) return;
    document.title = `Pay ${view.brandName}`;
    if (posted.current === view.status) return;
    posted.current = view.status;
    postStatus(view.allowedEmbedOrigins, view.receiptId, view.status);
  }, [view]);

  if (load.kind === 'loading') return <Shell>{<p className="muted">Loading the payment…</p>}</Shell>;
  if (load.kind === 'not_found') {
    return (
      <Shell>
        <Notice kind="error" testId="not-found">
          <strong>This payment link is not valid.</strong> No receipt matches it. Open the complete link the merchant sent you;
          it may have been cut short or mistyped.
        </Notice>
      </Shell>
    );
  }
  if (load.kind === 'error') {
    return (
      <Shell>
        <Notice kind="error">The payment could not be loaded: {shortMessage(load.message)}. The page retries on its own.</Notice>
      </Shell>
    );
  }

  const v = load.view;
  const payment = v.payment;
  const phase = phaseOf({
    status: v.status,
    exception: v.exception,
    paid: payment?.paid ?? null,
    due: payment?.due ?? null,
    paidWhenSent: step.kind === 'sent' ? step.paidBefore : null,
  });
  const payable: Payable | null =
    payment !== null && payment.payTo !== null && BigInt(payment.due) > 0n && canOfferPayment(phase) ? { ...payment, payTo: payment.payTo } : null;

  async function pay(target: Payable, paidBefore: string) {
    const wallet = injectedWallet();
    if (wallet === null) {
      // The note above the button turns into an alert, rather than saying it twice.
      setHasWallet(false);
      setWalletAsked(true);
      setStep({ kind: 'idle' });
      return;
    }
    active.current = true;
    try {
      setStep({ kind: 'busy', what: 'Connect your wallet…' });
      const from = await connect(wallet);
      setAccount(from);
      void track('buyer_logged_in');
      setStep({ kind: 'busy', what: `Switching your wallet to ${chainName(target.chainId)}…` });
      await ensureChain(wallet, target.chainId);
      await track('checkout_initialized');
      setStep({ kind: 'busy', what: `Confirm the transfer of ${tokenUnits(target.due, target)} in your wallet…` });
      const hash = await sendTransfer(wallet, from, target);
      setStep({ kind: 'sent', hash, paidBefore });
      void sendHint(hash).then(() => refresh());
    } catch (err) {
      setStep({ kind: 'error', ...errorParts(err) });
    }
  }

  return (
    <Shell brand={v.brandName} receiptId={v.receiptId}>
      {offline !== null && <Notice kind="warn">Connection trouble ({shortMessage(offline)}); retrying…</Notice>}
      <Summary view={v} />
      <StatusPanel
        status={v.status}
        exception={v.exception}
        phase={phase}
        transactionHash={v.transactionHash ?? (step.kind === 'sent' ? step.hash : null)}
      />
      {payment === null ? (
        <Notice kind="error" testId="no-chain">
          Payments are not available on this server right now. Please contact the merchant.
        </Notice>
      ) : payment.payTo === null ? (
        <Notice kind="error" testId="no-split">
          <strong>This shop cannot take payments yet:</strong> its split contract is not deployed. Please let the merchant know.
        </Notice>
      ) : (
        <>
          {BigInt(payment.paid) > 0n && <Amounts payment={payment} />}
          {phase === 'completed' && v.exception === 'overpaid' && <Overpaid payment={payment} />}
          {payable !== null && (
            <PayOffer
              payable={payable}
              phase={phase}
              expiresAt={v.expiresAt}
              busy={step.kind === 'busy' ? step.what : null}
              error={step.kind === 'error' ? { message: step.message, detail: step.detail } : null}
              account={account}
              hasWallet={hasWallet}
              walletAsked={walletAsked}
              onPay={() => void pay(payable, payment.paid)}
            />
          )}
        </>
      )}
    </Shell>
  );
}

function Shell(props: { brand?: string; receiptId?: string; children: ReactNode }) {
  return (
    <main className="pay">
      <header className="pay-header">
        <h1 data-testid="brand">{props.brand ?? 'Payment'}</h1>
        {props.receiptId !== undefined && <p className="muted small">Receipt {props.receiptId}</p>}
      </header>
      {props.children}
      <footer className="muted small pay-footer">Payments by Splitline · split on-chain</footer>
    </main>
  );
}
