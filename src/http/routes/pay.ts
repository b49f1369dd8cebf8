/**
 * The payment page's JSON API. It mirrors the page URL, query part included: the receipt id alone
 * finds nothing, the unguessable token `t` must come with it. No credential otherwise; rate-limited
 * per client address.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.ts';
import { Budgets } from '../../gateway/budgets.ts';
import type { PaymentUrl } from '../../payments/payment-page.ts';
import { errorRef } from '../../contract/common.ts';
import { AuthorizationBody, AuthorizationRelayed, HintNoted, PageStatusBody, PageStatusRecorded, PaymentView, PayParams, PayQuery, TransactionHintBody } from '../../contract/pay.ts';
import type { App } from '../app-type.ts';

const errors = { 400: errorRef, 404: errorRef, 409: errorRef, 429: errorRef, 503: errorRef };

export function payRoutes(app: App, deps: Deps): void {
  const budgets = new Budgets(deps.limiter, deps.config);

  /** The payment URL a request names, with the client's budgets it spends (src/payments/payment-page.ts). */
  function urlOf(request: FastifyRequest & { params: PayParams; query: PayQuery }, reply: FastifyReply): PaymentUrl {
    return {
      id: request.params.id,
      token: request.query.t,
      budget: {
        unknown: () => budgets.failed(request, 'pay-unknown', reply),
        spend: (receipt) => budgets.spend(request, reply, `pay:${receipt.wallet}:${receipt.id}`),
      },
    };
  }

  app.get(
    '/api/pay/:id',
    {
      config: { auth: 'public', budget: 'handler' },
      schema: {
        tags: ['payment page'],
        summary: 'What the payment page shows and what the buyer must send',
        params: PayParams,
        querystring: PayQuery,
        response: { 200: PaymentView, ...errors },
      },
    },
    async (request, reply) => {
      const view = await deps.paymentPage.view(urlOf(request, reply));
      reply.header('cache-control', 'no-store');
      return view;
    },
  );

  // The page's tracking statuses. POST /api/receipts/status would need the merchant wallet, which
  // the page does not know; the payment URL's token already names the receipt, so it suffices here.
  app.post(
    '/api/pay/:id/status',
    {
      config: { auth: 'public', budget: 'handler' },
      schema: {
        tags: ['payment page'],
        summary: 'Record a tracking status from the payment page',
        description:
          'The same tracking statuses as POST /api/receipts/status (link_opened, buyer_logged_in, checkout_initialized), ' +
          'authorised by the payment URL instead of the merchant wallet. They move an unpaid receipt only; once a payment ' +
          'is on chain they are kept in the status history alone. A URL that names no receipt gets the same answer as an ' +
          'unpaid receipt (the status sent), so this route tells nothing about which receipts exist.',
        params: PayParams,
        querystring: PayQuery,
        body: PageStatusBody,
        response: {
          200: PageStatusRecorded,
          ...errors,
        },
      },
    },
    async (request, reply) => deps.paymentPage.track({ ...urlOf(request, reply), status: request.body.status }),
  );

  app.post(
    '/api/pay/:id/transaction',
    {
      config: { auth: 'public', budget: 'handler' },
      schema: {
        tags: ['payment page'],
        summary: 'Tell the service where to look for the payment sooner',
        description:
          "Only a hint: the receipt's payments are the transfers into its payment address (payment.payTo), found on chain " +
          'whether or not a hash is sent, and a hash never attributes money. At most 5 unresolved hints per receipt ' +
          '(429 beyond), rate-limited per client address.',
        params: PayParams,
        querystring: PayQuery,
        body: TransactionHintBody,
        errorCodes: { 503: ['chain_unavailable'] },
        response: {
          202: HintNoted,
          ...errors,
        },
      },
    },
    async (request, reply) => reply.status(202).send(await deps.paymentPage.hint({ ...urlOf(request, reply), transactionHash: request.body.transactionHash })),
  );

  app.post(
    '/api/pay/:id/authorization',
    {
      config: { auth: 'public', budget: 'handler' },
      schema: {
        tags: ['payment page'],
        summary: 'Pay without gas: submit an EIP-3009 authorization',
        description:
          'Offered where payment.gasless (GET /api/pay/{id}) is not null; its name and version are the EIP-712 domain to sign in. ' +
          "The buyer signs TransferWithAuthorization in the token's own EIP-712 domain (name and version read from the token): " +
          '`to` is payment.payTo, `value` exactly payment.due, `validAfter` in the past, `validBefore` at least 60 s away and no ' +
          "later than an hour past expiresAt. The service checks the signature recovers `from`, that `from` holds the value and " +
          "the nonce is unused, then submits it with the forwarder factory's payAndSweep, which moves the money to the payment " +
          'address and sweeps it into the split in one transaction; the service pays the gas. Attribution is unchanged: it is an ' +
          'ordinary transfer into the payment address. 409 `gasless_unavailable` when the token has no EIP-3009 or the receipt ' +
          'predates it, `nothing_due`, `authorization_used`, `relay_refused`; 503 `relay_unavailable` without a key for gas. ' +
          'At most 10 attempts per receipt and 10 per payer a minute, besides the per-address limit of every public route.',
        params: PayParams,
        querystring: PayQuery,
        body: AuthorizationBody,
        errorCodes: {
          400: ['invalid_input', 'invalid_signature', 'insufficient_balance'],
          409: ['gasless_unavailable', 'nothing_due', 'authorization_used', 'relay_refused', 'not_payable'],
          503: ['chain_unavailable', 'relay_unavailable'],
        },
        response: {
          202: AuthorizationRelayed,
          ...errors,
        },
      },
    },
    async (request, reply) => reply.status(202).send(await deps.paymentPage.relay({ ...urlOf(request, reply), authorization: request.body })),
  );
}

