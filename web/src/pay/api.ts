/**
 * The payment page's calls. Each mirrors the page's own URL, token included: the id alone
 * reaches nothing (DESIGN.md, "Payment page API").
 */
import { arr, nullable, num, optional, record, str } from '../lib/decode.ts';
import { call } from '../lib/http.ts';

const payment = record({
  chainId: num,
  tokenAddress: str,
  tokenSymbol: str,
  tokenDecimals: num,
  /** The receipt's own payment address: the only address the buyer pays. Null while the merchant has no split. */
  payTo: nullable(str),
  /** The merchant's split, where the money is swept; never paid directly. */
  splitAddress: nullable(str),
  /** Token base units as decimal strings: the total, what arrived so far, what is still missing. */
  amount: str,
  paid: str,
  due: str,
});
export type Payment = ReturnType<typeof payment>;

const view = record({
  receiptId: str,
  brandName: str,
  lineItems: arr(record({ label: str, priceUsd: num, qty: optional(num) })),
  totalUsd: num,
  currency: str,
  status: str,
  exception: nullable(str),
  /** Unix ms after which a receipt with nothing received fails (expired). */
  expiresAt: num,
  transactionHash: nullable(str),
  allowedEmbedOrigins: arr(str),
  payment: nullable(payment),
});
export type PaymentView = ReturnType<typeof view>;

export type TrackingStatus = 'link_opened' | 'buyer_logged_in' | 'checkout_initialized';

/** Where this page is: the receipt id from the path and the token from the query. */
export interface PayLink {
  id: string;
  token: string;
}

export function payLinkFromLocation(loc: Location): PayLink {
  const last = loc.pathname.split('/').filter((s) => s !== '').pop() ?? '';
  let id = '';
  try {
    id = decodeURIComponent(last);
  } catch (err) {
    // A malformed escape cannot name a receipt; the server then answers not_found.
    console.warn('payment link path is not valid percent-encoding', err);
  }
  return { id, token: new URLSearchParams(loc.search).get('t') ?? '' };
}

const path = (link: PayLink, rest = '') => `/api/pay/${encodeURIComponent(link.id)}${rest}`;

export const payApi = {
  get: (link: PayLink) => call('GET', path(link), view, { query: { t: link.token } }),
  track: (link: PayLink, status: TrackingStatus) =>
    call('POST', path(link, '/status'), record({ status: str }), { query: { t: link.token }, body: { status } }),
  /**
   * Only a hint of where to look sooner: the service finds the payment on chain either way.
   * `idempotencyKey`: the same for every attempt at sending one hint.
   */
  submit: (link: PayLink, transactionHash: string, idempotencyKey?: string) =>
    call('POST', path(link, '/transaction'), record({ status: str }), { query: { t: link.token }, body: { transactionHash }, idempotencyKey }),
};
