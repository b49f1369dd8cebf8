/**
 * The hosted payment page: what is being paid, a browser-wallet payment to the receipt's own
 * payment address, an EIP-681 QR code for phones, the time left, and the receipt's live status,
 * which it also posts to an allowed parent when framed.
 */
import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError, messageOf, newIdempotencyKey } from '../lib/http.ts';
import { payApi, payLinkFromLocation, type AuthorizationBody, type PaymentView, type TrackingStatus } from './api.ts';
import { authorizationDeadline, gaslessErrorParts, outcomeUnknown, signAuthorization, type GaslessPayable } from './gasless.ts';
import { postStatus } from './embed.ts';
import { Notice } from '../components/Notice.tsx';
import { Amounts, Overpaid, PayOffer, StatusPanel, Summary, tokenUnits } from './parts.tsx';
import { canOfferPayment, chainName, FINAL, IN_FLIGHT, isUnpaid, phaseOf } from './status.ts';
import type { Hex } from 'viem';
import type { Eip1193Provider } from '../lib/wallet.ts';
import { connect, ensureChain, errorParts, injectedWallet, sendTransfer, shortMessage, WalletError, type Payable } from './wallet-pay.ts';

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

/**
 * Posts a signed authorization; a network hiccup or a 5xx is retried once with the same key and
 * body (the same authorization can move the money only once, whoever submits it).
 */
async function submitAuthorization(body: AuthorizationBody, key: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await payApi.authorize(link, body, key)).transactionHash;
    } catch (err) {
      const transient = err instanceof ApiError && (err.status === 0 || err.status >= 500);
      if (!transient || attempt >= 2) throw err;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/** A signed authorization whose fate is unknown (no answer, 5xx, 429): posted again rather than a second one signed. */
interface PendingAuthorization {
  body: AuthorizationBody;
  key: string;
  payTo: string;
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
  const pendingAuthorization = useRef<PendingAuthorization | null>(null);

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

  /**
   * What every way of paying starts with: the wallet, its account, the receipt's chain (a wallet
   * also signs EIP-712 data only for its active chain). Null when there is no wallet.
   */
  async function openWallet(target: Payable): Promise<{ wallet: Eip1193Provider; from: Hex } | null> {
    const wallet = injectedWallet();
    if (wallet === null) {
      // The note above the button turns into an alert, rather than saying it twice.
      setHasWallet(false);
      setWalletAsked(true);
      setStep({ kind: 'idle' });
      return null;
    }
    active.current = true;
    setStep({ kind: 'busy', what: 'Connect your wallet…' });
    const from = await connect(wallet);
    setAccount(from);
    void track('buyer_logged_in');
    setStep({ kind: 'busy', what: `Switching your wallet to ${chainName(target.chainId)}…` });
    await ensureChain(wallet, target.chainId);
    await track('checkout_initialized');
    return { wallet, from };
  }

  async function pay(target: Payable, paidBefore: string) {
    try {
      const opened = await openWallet(target);
      if (opened === null) return;
      const { wallet, from } = opened;
      setStep({ kind: 'busy', what: `Confirm the transfer of ${tokenUnits(target.due, target)} in your wallet…` });
      const hash = await sendTransfer(wallet, from, target);
      setStep({ kind: 'sent', hash, paidBefore });
      void sendHint(hash).then(() => refresh());
    } catch (err) {
      setStep({ kind: 'error', ...errorParts(err) });
    }
  }

  /**
   * Pay without gas: one signature in the wallet (no transaction, no fee), posted to the service,
   * which submits it and pays the gas; the page then follows the transaction like its own.
   */
  async function payGasless(target: GaslessPayable, paidBefore: string, expiresAt: number) {
    try {
      const opened = await openWallet(target);
      if (opened === null) return;
      const { wallet, from } = opened;
      const previous = pendingAuthorization.current;
      const nowS = Math.floor(Date.now() / 1000);
      let pending: PendingAuthorization;
      if (
        previous !== null &&
        previous.payTo === target.payTo &&
        previous.body.value === target.due &&
        previous.body.from.toLowerCase() === from.toLowerCase() &&
        previous.body.validBefore - nowS >= 120
      ) {
        pending = previous;
      } else {
        const validBefore = authorizationDeadline(expiresAt, Date.now());
        if (validBefore === null) {
          throw new WalletError('This receipt is too long past its expiry to be paid without gas; pay with a browser wallet transfer or the QR code.');
        }
        setStep({ kind: 'busy', what: `Sign the payment of ${tokenUnits(target.due, target)} in your wallet (a signature, no network fee)…` });
        pending = { body: await signAuthorization(wallet, from, target, validBefore), key: newIdempotencyKey(), payTo: target.payTo };
        pendingAuthorization.current = pending;
      }
      setStep({ kind: 'busy', what: 'Submitting your payment; the service pays the network fee…' });
      const hash = await submitAuthorization(pending.body, pending.key);
      pendingAuthorization.current = null;
      setStep({ kind: 'sent', hash, paidBefore });
      void refresh();
    } catch (err) {
      // A clear refusal ends that authorization; after no answer, the next click posts it again.
      if (!outcomeUnknown(err) || err instanceof WalletError) pendingAuthorization.current = null;
      setStep({ kind: 'error', ...gaslessErrorParts(err, target.tokenSymbol) });
    }
  }

  const gaslessTarget: GaslessPayable | null =
    payable !== null && payment?.gasless != null && authorizationDeadline(v.expiresAt, Date.now()) !== null ? { ...payable, gasless: payment.gasless } : null;

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
      {(phase === 'completed' || phase === 'refunded' || phase === 'expired' || v.status === 'failed') && <BackToShop url={v.returnUrl} />}
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
              onPayGasless={gaslessTarget === null ? null : () => void payGasless(gaslessTarget, payment.paid, v.expiresAt)}
            />
          )}
        </>
      )}
    </Shell>
  );
}

/**
 * The way back to the shop once the receipt is settled: a link the buyer follows, never a
 * redirect. The server checked the URL and its origin against the shop's; the page still shows
 * only an http(s) URL, so no other scheme (javascript:, data:) can ever become a link here.
 */
function BackToShop(props: { url: string | null }) {
  const href = linkableUrl(props.url);
  if (href === null) return null;
  return (
    <p className="pay-back">
      {/* _top: from an embedding shop's frame the shop's page opens in the window, not in the frame. */}
      <a className="btn btn-primary btn-pay" href={href} target="_top" rel="noopener noreferrer" data-testid="back-to-shop">
        Back to shop
      </a>
    </p>
  );
}

/** An absolute http(s) URL as the browser writes it, else null. */
export function linkableUrl(url: string | null): string | null {
  if (url === null) return null;
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null;
  } catch {
    return null;
  }
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
