/**
 * The payment page's JSON API. It mirrors the page URL, query part included: the receipt id alone
 * finds nothing, the unguessable token `t` must come with it. No credential otherwise; rate-limited
 * per client address.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.ts';
import { Budgets } from '../../gateway/budgets.ts';
import { AppError, NotFound } from '../../domain/errors.ts';
import { lineItemViews, recordTrackingStatus } from '../../domain/receipts.ts';
import { centsToUsd } from '../../domain/money.ts';
import { brandOf, getShopSettings } from '../../domain/shop.ts';
import { returnUrlShown } from '../../domain/return-url.ts';
import { pageAsksForBalances } from '../../payments/other-money.ts';
import { quoteFor, receiptByPayToken } from '../../payments/quote.ts';
import { recordHint } from '../../payments/hints.ts';
import { gaslessDomain, relayAuthorization } from '../../payments/gasless.ts';
import { RateLimited } from '../../domain/errors.ts';
import { errorRef } from '../../contract/common.ts';
import { AuthorizationBody, AuthorizationRelayed, HintNoted, PageStatusBody, PageStatusRecorded, PaymentView, PayParams, PayQuery, TransactionHintBody } from '../../contract/pay.ts';
import type { App } from '../app-type.ts';

class ChainUnavailable extends AppError {
  constructor() {
    super(503, 'chain_unavailable', 'Payments are not available: this instance runs without a chain');
  }
}

const errors = { 400: errorRef, 404: errorRef, 409: errorRef, 429: errorRef, 503: errorRef };

export function payRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;
  const budgets = new Budgets(deps.limiter, deps.config);

  /**
   * The receipt a payment URL names, on the client's budget for that receipt; a URL that names
   * none spends the client's budget for such URLs instead, so junk URLs never lock a buyer out
   * of a real payment page, even from the same address.
   */
  async function receiptOf(request: FastifyRequest, reply: FastifyReply, id: string, token: string | undefined) {
    let row;
    try {
      row = await receiptByPayToken(db, id, token);
    } catch (err) {
      if (err instanceof NotFound) await budgets.failed(request, 'pay-unknown', reply);
      throw err;
    }
    await budgets.spend(request, reply, `pay:${row.wallet}:${row.id}`);
    return row;
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
      const row = await receiptOf(request, reply, request.params.id, request.query.t);
      const [shop] = await Promise.all([
        getShopSettings(db, row.wallet),
        // ETH or another token sent here is found by its balance: the worker reads it soon (once a
        // minute per receipt; most loads write nothing).
        deps.chain === undefined ? undefined : pageAsksForBalances(db, deps.limiter, { ...row, receiptId: row.id }, Date.now()),
      ]);
      reply.header('cache-control', 'no-store');
      return {
        receiptId: row.id,
        // The shop's name, else the deployment's brand: the brand its receipts show (src/domain/shop.ts).
        brandName: brandOf(shop, deps.config.brandName),
        lineItems: lineItemViews(row.lineItems),
        totalUsd: centsToUsd(row.totalCents),
        currency: row.currency,
        status: row.status,
        exception: row.exception,
        expiresAt: row.expiresAt,
        transactionHash: row.transactionHash,
        allowedEmbedOrigins: shop.allowedEmbedOrigins,
        returnUrl: returnUrlShown(row.returnUrl, shop.allowedEmbedOrigins),
        payment: deps.chain === undefined ? null : { ...(await quoteFor(db, row, deps.chain)), gasless: await gaslessDomain(deps.chain, deps.tokenDomains, row) },
      };
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
    async (request, reply) => {
      try {
        const row = await receiptOf(request, reply, request.params.id, request.query.t);
        return await recordTrackingStatus(db, { wallet: row.wallet, receiptId: row.id, status: request.body.status });
      } catch (err) {
        // No credential beyond the URL: a wrong URL gets the answer an unpaid receipt gives.
        if (err instanceof NotFound) return { status: request.body.status };
        throw err;
      }
    },
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
    async (request, reply) => {
      if (deps.chain === undefined) throw new ChainUnavailable();
      const row = await receiptOf(request, reply, request.params.id, request.query.t);
      await recordHint(db, { wallet: row.wallet, receiptId: row.id, hash: request.body.transactionHash, now: Date.now() });
      deps.chainWorker?.kick();
      return reply.status(202).send({ status: row.status });
    },
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
    async (request, reply) => {
      if (deps.chain === undefined) throw new ChainUnavailable();
      const row = await receiptOf(request, reply, request.params.id, request.query.t);
      for (const [key, limit] of [[`relay:receipt:${row.wallet}:${row.id}`, RELAYS_PER_RECEIPT], [`relay:from:${request.body.from.toLowerCase()}`, RELAYS_PER_PAYER]] as const) {
        const decision = await deps.limiter.hit(key, limit);
        if (!decision.allowed) throw new RateLimited(decision.resetAt, 'Too many gasless payments for this receipt or payer; retry after resetAt');
      }
      const now = Date.now();
      const transactionHash = await relayAuthorization(db, deps.chain, row, request.body, now, { domains: deps.tokenDomains, deployer: deps.deployer });
      // Where to look sooner, like a payment page's own hint.
      await recordHint(db, { wallet: row.wallet, receiptId: row.id, hash: transactionHash, now }).catch(() => undefined);
      deps.chainWorker?.kick();
      // What the relay cost the service, for /healthz, once it is mined.
      deps.relayGas?.follow(transactionHash);
      return reply.status(202).send({ transactionHash });
    },
  );
}

/** Gasless relays per receipt and per payer a minute (each costs the service gas). */
const RELAYS_PER_RECEIPT = 10;
const RELAYS_PER_PAYER = 10;
