/**
 * The payment page's calls. Each mirrors the page's own URL, token included: the id alone
 * reaches nothing (DESIGN.md, "Payment page API").
 */
import { AuthorizationRelayed, HintNoted, PageStatusRecorded, PaymentView as PaymentViewSchema, type Payment, type PaymentView } from '../../../src/contract/pay.ts';
import type { AuthorizationBody } from '../../../src/contract/pay.ts';
import type { TrackingStatus } from '../../../src/contract/receipts.ts';
import { call } from '../lib/http.ts';

export type { AuthorizationBody, Payment, PaymentView, TrackingStatus };

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
  get: (link: PayLink) => call('GET', path(link), PaymentViewSchema, { query: { t: link.token } }),
  track: (link: PayLink, status: TrackingStatus) =>
    call('POST', path(link, '/status'), PageStatusRecorded, { query: { t: link.token }, body: { status } }),
  /**
   * Only a hint of where to look sooner: the service finds the payment on chain either way.
   * `idempotencyKey`: the same for every attempt at sending one hint.
   */
  submit: (link: PayLink, transactionHash: string, idempotencyKey?: string) =>
    call('POST', path(link, '/transaction'), HintNoted, { query: { t: link.token }, body: { transactionHash }, idempotencyKey }),
  /**
   * Pay without gas: the buyer's signed EIP-3009 authorization, which the service submits and pays
   * the gas of. `idempotencyKey`: the same for every attempt at sending one authorization.
   */
  authorize: (link: PayLink, body: AuthorizationBody, idempotencyKey: string) =>
    call('POST', path(link, '/authorization'), AuthorizationRelayed, { query: { t: link.token }, body, idempotencyKey }),
};
