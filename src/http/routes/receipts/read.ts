/** Reading receipts: the merchant's list, one receipt with its history, and where a payment stands. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { DatabaseUnavailable, NotFound } from '../../../domain/errors.ts';
import { findReceipt, getReceiptJson, getReceiptStatus, listReceiptsJson, NO_REFUNDS, paymentUrl } from '../../../domain/receipts.ts';
import { isDbDown } from '../../../db/client.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { sendJsonText } from '../../json-text.ts';
import { answerEnum, Degraded, keyErrors, PaymentState, PositiveUsd, ReceiptStatus, RefundedUsd, security, TxHash, Usd, Wallet } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

const ReceiptDetail = Type.Object({
  receiptId: Type.String({ examples: ['order-1001'] }),
  totalUsd: Usd({ examples: [7] }),
  currency: Type.String({ examples: ['USD'] }),
  lineItems: Type.Array(Type.Ref('LineItem')),
  createdAt: Type.Integer({ description: 'Unix ms', examples: [1767225600000] }),
  brandName: Type.String({ examples: ['Splitline'] }),
  status: ReceiptStatus,
  ...PaymentState,
  refundedUsd: RefundedUsd,
  payTo: Type.Union([Wallet, Type.Null()], { description: "The receipt's own payment address; null until the merchant's split is known" }),
  payer: Type.Union([Wallet, Type.Null()], {
    description:
      "The address that sent the receipt's first transfer of its token; null before one. It may be an exchange's or a " +
      'smart wallet that cannot receive a refund: confirm the refund address with the buyer',
  }),
  jurisdictionCode: Type.Union([Type.String(), Type.Null()], { examples: ['CA'] }),
  taxRate: Type.Number({ minimum: 0, maximum: 1, description: 'Fraction: 0.0825 means 8.25%', examples: [0] }),
  taxComponents: Type.Array(Type.String()),
  transactionHash: Type.Optional(TxHash),
  transactionTimestamp: Type.Optional(Type.Integer({ description: 'Unix ms of the block' })),
  statusHistory: Type.Array(
    Type.Object({
      status: Type.String({ examples: ['pending'] }),
      at: Type.Integer({ description: 'When it was first recorded', examples: [1767225600000] }),
      source: answerEnum(['api', 'order', 'terminal', 'tracking', 'chain', 'admin'], { description: 'Who recorded it' }),
      count: Type.Optional(Type.Integer({ minimum: 2, description: 'How many times it was recorded, when more than once (a repeated tracking status)' })),
    }),
    { description: 'Every status change, oldest first' },
  ),
  refunds: Type.Array(
    Type.Object({
      id: Type.String(),
      usd: PositiveUsd({ examples: [3.5] }),
      buyer: Wallet,
      txHash: Type.Union([TxHash, Type.Null()]),
      verified: Type.Boolean({ description: 'Its transfer of the token to the buyer was found on the chain' }),
      createdAt: Type.Integer({ description: 'Unix ms' }),
    }),
    { description: 'Every refund, oldest first' },
  ),
  paymentUrl: Type.Optional(
    Type.String({
      description:
        "The receipt's payment URL ({SITE_URL}/pay/<id>?t=...). Only in the admin app's answer (session cookie), " +
        'so the merchant can show it again; never with a subscription key, and never on the payment page API',
    }),
  ),
  ...Degraded,
}, { description: 'The receipt with its status history and refunds' });

/** `json` (one JSON object as text) with `paymentUrl` added as its last field. */
const withPaymentUrl = (json: string, url: string) => `${json.slice(0, json.lastIndexOf('}'))},"paymentUrl":${JSON.stringify(url)}}`;

export function receiptReadRoutes(app: App, deps: Deps): void {
  const { database, config, journal } = deps;
  const db = database.db;

  app.get(
    '/api/receipts',
    {
      config: { auth: 'key', scope: 'receipts:read' },
      schema: {
        tags: ['receipts'],
        summary: 'List recent receipts',
        security,
        querystring: Type.Object({
          limit: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 200, default: 100, description: 'How many receipts, newest first; outside 1..200: 400 invalid_input' }),
          ),
        }),
        response: {
          200: Type.Object(
            { receipts: Type.Array(Type.Ref('Receipt')), ...Degraded },
            { description: "The merchant's receipts, newest first; an empty list with degraded: true while the database is unreachable" },
          ),
          ...keyErrors(400),
        },
      },
    },
    async (request, reply) => {
      const wallet = merchantOf(request);
      try {
        // Already JSON, built by the database (see listReceiptsJson): sent as it is.
        const receipts = await listReceiptsJson(db, wallet, request.query.limit ?? 100, config.brandName);
        return sendJsonText(reply, `{"receipts":${receipts}}`);
      } catch (err) {
        if (!isDbDown(err)) throw err;
        return { receipts: [], degraded: true, reason: 'database_unavailable' };
      }
    },
  );

  app.get(
    '/api/receipts/status',
    {
      config: { auth: 'key', scope: 'receipts:read' },
      schema: {
        tags: ['receipts'],
        summary: 'Payment status of a receipt',
        security,
        querystring: Type.Object({ receiptId: Type.String({ minLength: 1, description: 'The receipt id', examples: ['order-1001'] }) }),
        response: {
          200: Type.Object(
            {
              id: Type.String({ examples: ['order-1001'] }),
              status: ReceiptStatus,
              transactionHash: Type.Union([TxHash, Type.Null()], { description: 'The first transfer into the payment address; null before one' }),
              currency: Type.String({ description: 'The token the receipt is paid in', examples: ['USDC'] }),
              amount: Usd({ description: 'The total, in token units (1 USDC = 1 USD)', examples: [7] }),
              ...PaymentState,
            },
            { description: 'Where the payment stands' },
          ),
          ...keyErrors(400, 404),
        },
      },
    },
    async (request) => getReceiptStatus(db, merchantOf(request), request.query.receiptId),
  );

  app.get(
    '/api/receipts/:id',
    {
      config: { auth: 'key', scope: 'receipts:read' },
      schema: {
        tags: ['receipts'],
        summary: 'One receipt with its status history',
        security,
        params: Type.Object({ id: Type.String({ description: 'The receipt id', examples: ['order-1001'] }) }),
        response: { 200: ReceiptDetail, ...keyErrors(404) },
      },
    },
    async (request, reply) => {
      const wallet = merchantOf(request);
      try {
        // Already JSON, built by the database (see getReceiptJson): sent as it is.
        const json = await getReceiptJson(db, wallet, request.params.id, config.brandName, deps.chain?.usdc.address);
        // The admin app (a session, no key) shows the payment link again on the receipt's page.
        if (request.principal !== null || request.session === null) return sendJsonText(reply, json);
        const row = await findReceipt(db, wallet, request.params.id);
        return sendJsonText(reply, withPaymentUrl(json, paymentUrl(config.siteUrl, row.id, row.payToken)));
      } catch (err) {
        // Also answers in the moment between the database coming back and the journal replaying it.
        const pending = journal.findReceipt(wallet, request.params.id);
        if (pending !== undefined && (isDbDown(err) || err instanceof NotFound)) {
          return { ...pending, ...NO_REFUNDS, degraded: true, reason: 'database_unavailable' };
        }
        if (isDbDown(err)) throw new DatabaseUnavailable(err);
        throw err;
      }
    },
  );
}
