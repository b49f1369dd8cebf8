/**
 * The payment page's JSON API. It mirrors the page URL, query part included: the receipt id alone
 * finds nothing, the unguessable token `t` must come with it. No credential otherwise; rate-limited
 * per client address.
 */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { AppError } from '../../domain/errors.ts';
import { brandNameOf, lineItemViews, recordTrackingStatus, TRACKING_STATUSES } from '../../domain/receipts.ts';
import { centsToUsd } from '../../domain/money.ts';
import { getShopSettings } from '../../domain/shop.ts';
import { quoteFor, receiptByPayToken } from '../../payments/quote.ts';
import { submitPayment } from '../../payments/verifier.ts';
import { errorRef } from '../schemas.ts';
import type { App } from './index.ts';

class ChainUnavailable extends AppError {
  constructor() {
    super(503, 'chain_unavailable', 'Payments are not available: this instance runs without a chain');
  }
}

const Params = Type.Object({ id: Type.String({ maxLength: 64 }) });
const Query = Type.Object({ t: Type.Optional(Type.String({ description: 'The token from the payment URL' })) });
const errors = { 400: errorRef, 404: errorRef, 409: errorRef, 429: errorRef, 503: errorRef };

export const PaymentView = Type.Object({
  receiptId: Type.String(),
  brandName: Type.String(),
  lineItems: Type.Array(Type.Ref('LineItem')),
  totalUsd: Type.Number(),
  currency: Type.String(),
  status: Type.String(),
  transactionHash: Type.Union([Type.String(), Type.Null()]),
  allowedEmbedOrigins: Type.Array(Type.String(), { description: 'Parent origins the page may post status messages to' }),
  payment: Type.Union([
    Type.Object({
      chainId: Type.Integer(),
      tokenAddress: Type.String(),
      tokenSymbol: Type.String(),
      tokenDecimals: Type.Integer(),
      splitAddress: Type.Union([Type.String(), Type.Null()]),
      amount: Type.String({ description: 'Token base units' }),
    }),
    Type.Null(),
  ]),
});

export function payRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;

  app.get(
    '/api/pay/:id',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['payment page'],
        summary: 'What the payment page shows and what the buyer must send',
        params: Params,
        querystring: Query,
        response: { 200: PaymentView, ...errors },
      },
    },
    async (request, reply) => {
      const row = await receiptByPayToken(db, request.params.id, request.query.t);
      const [brandName, shop] = await Promise.all([brandNameOf(db, row.wallet, deps.config.brandName), getShopSettings(db, row.wallet)]);
      reply.header('cache-control', 'no-store');
      return {
        receiptId: row.id,
        brandName,
        lineItems: lineItemViews(row.lineItems),
        totalUsd: centsToUsd(row.totalCents),
        currency: row.currency,
        status: row.status,
        transactionHash: row.transactionHash,
        allowedEmbedOrigins: shop.allowedEmbedOrigins,
        payment: deps.chain === undefined ? null : await quoteFor(db, row, deps.chain),
      };
    },
  );

  // The page's tracking statuses. POST /api/receipts/status would need the merchant wallet, which
  // the page does not know; the payment URL's token already names the receipt, so it suffices here.
  app.post(
    '/api/pay/:id/status',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['payment page'],
        summary: 'Record a tracking status from the payment page',
        description:
          'The same tracking statuses as POST /api/receipts/status (link_opened, buyer_logged_in, checkout_initialized), ' +
          'authorised by the payment URL instead of the merchant wallet. They move an unpaid receipt only; once a payment ' +
          'is on chain they are kept in the status history alone.',
        params: Params,
        querystring: Query,
        body: Type.Object({ status: Type.Union(TRACKING_STATUSES.map((s) => Type.Literal(s))) }),
        response: { 200: Type.Object({ status: Type.String({ description: "The receipt's status afterwards" }) }), ...errors },
      },
    },
    async (request) => {
      const row = await receiptByPayToken(db, request.params.id, request.query.t);
      return recordTrackingStatus(db, { wallet: row.wallet, receiptId: row.id, status: request.body.status });
    },
  );

  app.post(
    '/api/pay/:id/transaction',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['payment page'],
        summary: "Submit the buyer's transaction hash for verification",
        description: 'Verification runs in the background; the receipt then moves tx_mined → recipient_validated → completed.',
        params: Params,
        querystring: Query,
        body: Type.Object({ transactionHash: Type.String() }),
        response: { 202: Type.Object({ status: Type.String() }), ...errors },
      },
    },
    async (request, reply) => {
      if (deps.chain === undefined) throw new ChainUnavailable();
      const row = await receiptByPayToken(db, request.params.id, request.query.t);
      await submitPayment(db, row, request.body.transactionHash);
      deps.chainWorker?.kick();
      return reply.status(202).send({ status: row.status });
    },
  );
}
