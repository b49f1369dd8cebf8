import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { AppError, DatabaseUnavailable, Forbidden, InvalidInput, NotFound } from '../../domain/errors.ts';
import {
  createReceipt,
  getReceiptJson,
  getReceiptStatus,
  isSensitiveStatus,
  isTrackingStatus,
  listReceiptsJson,
  payTokenFor,
  NO_REFUNDS,
  recordTrackingStatus,
  TRACKING_STATUSES,
} from '../../domain/receipts.ts';
import { isAddress, normalizeWallet } from '../../domain/wallet.ts';
import { isDbDown } from '../../db/client.ts';
import { requireSession } from '../../auth/plugin.ts';
import { loadJwtKey } from '../../auth/secret.ts';
import { setSensitiveStatus } from '../../domain/sensitive-status.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { sendJsonText } from '../json-text.ts';
import { Degraded, errorRef, keyErrors, LineItem, PaymentState, RefundedUsd, security } from '../schemas.ts';
import type { App } from './index.ts';

const ReceiptDetail = Type.Object({
  receiptId: Type.String(),
  totalUsd: Type.Number(),
  currency: Type.String(),
  lineItems: Type.Array(Type.Ref('LineItem')),
  createdAt: Type.Integer(),
  brandName: Type.String(),
  status: Type.String(),
  ...PaymentState,
  refundedUsd: RefundedUsd,
  payTo: Type.Union([Type.String(), Type.Null()], { description: "The receipt's own payment address; null until the merchant's split is known" }),
  payer: Type.Union([Type.String(), Type.Null()], {
    description:
      "The address that sent the receipt's first transfer of its token; null before one. It may be an exchange's or a " +
      'smart wallet that cannot receive a refund: confirm the refund address with the buyer',
  }),
  jurisdictionCode: Type.Union([Type.String(), Type.Null()]),
  taxRate: Type.Number({ description: 'Fraction: 0.0825 means 8.25%' }),
  taxComponents: Type.Array(Type.String()),
  transactionHash: Type.Optional(Type.String()),
  transactionTimestamp: Type.Optional(Type.Integer()),
  statusHistory: Type.Array(
    Type.Object({
      status: Type.String(),
      at: Type.Integer({ description: 'When it was first recorded' }),
      source: Type.String(),
      count: Type.Optional(Type.Integer({ minimum: 2, description: 'How many times it was recorded, when more than once (a repeated tracking status)' })),
    }),
    { description: 'Every status change, oldest first' },
  ),
  refunds: Type.Array(
    Type.Object({
      id: Type.String(),
      usd: Type.Number(),
      buyer: Type.String(),
      txHash: Type.Union([Type.String(), Type.Null()]),
      verified: Type.Boolean({ description: 'Its transfer of the token to the buyer was found on the chain' }),
      createdAt: Type.Integer(),
    }),
    { description: 'Every refund, oldest first' },
  ),
  degraded: Type.Optional(Type.Boolean()),
  reason: Type.Optional(Type.String()),
});

const CreateBody = Type.Object({
  id: Type.String({ description: 'Assigned by the caller; unique per merchant', minLength: 1, maxLength: 64 }),
  lineItems: Type.Array(LineItem, { minItems: 1, maxItems: 200 }),
  totalUsd: Type.Number({ minimum: 0, description: 'Must equal the sum of priceUsd × qty' }),
  expiresInMinutes: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 43_200, description: 'Minutes the receipt may be paid in; RECEIPT_TTL_MINUTES (60) by default' }),
  ),
});

const Created = Type.Object({
  id: Type.String(),
  paymentUrl: Type.String(),
  status: Type.String(),
  ...Degraded,
});

const StatusBody = Type.Object({
  receiptId: Type.Optional(Type.Unknown({ description: 'Receipt id' })),
  wallet: Type.Optional(Type.Unknown({ description: 'Merchant wallet, 0x-prefixed 40 hex' })),
  status: Type.Optional(Type.Unknown({ description: `Tracking status: ${TRACKING_STATUSES.join(', ')}` })),
});

export function receiptRoutes(app: App, deps: Deps): void {
  const { database, config, journal } = deps;
  const db = database.db;
  const payTokenSecret = loadJwtKey(config);
  const siteOrigin = new URL(config.siteUrl).origin;

  app.get(
    '/api/receipts',
    {
      config: { scope: 'receipts:read' },
      schema: {
        tags: ['receipts'],
        summary: 'List recent receipts',
        security,
        querystring: Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 200, default: 100 }) }),
        response: { 200: Type.Object({ receipts: Type.Array(Type.Ref('Receipt')), ...Degraded }), ...keyErrors(400) },
      },
    },
    async (request, reply) => {
      const wallet = merchantOf(request);
      try {
        // Already JSON, built by the database (see listReceiptsJson): sent as it is.
        const receipts = await listReceiptsJson(db, wallet, request.query.limit, config.brandName);
        return sendJsonText(reply, `{"receipts":${receipts}}`);
      } catch (err) {
        if (!isDbDown(err)) throw err;
        return { receipts: [], degraded: true, reason: 'database_unavailable' };
      }
    },
  );

  app.post(
    '/api/receipts',
    {
      config: { scope: 'receipts:write' },
      schema: {
        tags: ['receipts'],
        summary: 'Create a receipt',
        description:
          'Idempotent: the same id with the same body answers as the first call did; the same id with a different body is 409 conflict.',
        security,
        body: CreateBody,
        response: { 201: Created, ...keyErrors(400, 409) },
      },
    },
    async (request, reply) => {
      const wallet = merchantOf(request);
      const params = { wallet, ...request.body };
      // One token for both paths: a create whose commit landed but whose answer was lost replays as itself.
      const attempt = { payToken: payTokenFor(payTokenSecret, wallet, params.id), createdAt: Date.now(), ttlMinutes: config.receiptTtlMinutes };
      // While the journal still holds this receipt, it answers (same paymentUrl, or 409).
      if (!journal.holds(wallet, params.id)) {
        try {
          return reply.status(201).send(await createReceipt(db, config.siteUrl, params, attempt));
        } catch (err) {
          if (!isDbDown(err)) throw err;
        }
      }
      const created = await journal.recordReceipt(params, attempt);
      return reply.status(201).send({ ...created, degraded: true, reason: 'database_unavailable' });
    },
  );

  app.get(
    '/api/receipts/status',
    {
      config: { scope: 'receipts:read' },
      schema: {
        tags: ['receipts'],
        summary: 'Payment status of a receipt',
        security,
        querystring: Type.Object({ receiptId: Type.String({ minLength: 1 }) }),
        response: {
          200: Type.Object({
            id: Type.String(),
            status: Type.String(),
            transactionHash: Type.Union([Type.String(), Type.Null()]),
            currency: Type.String(),
            amount: Type.Number(),
            ...PaymentState,
          }),
          ...keyErrors(400, 404),
        },
      },
    },
    async (request) => getReceiptStatus(db, merchantOf(request), request.query.receiptId),
  );

  app.get(
    '/api/receipts/:id',
    {
      config: { scope: 'receipts:read' },
      schema: {
        tags: ['receipts'],
        summary: 'One receipt with its status history',
        security,
        params: Type.Object({ id: Type.String() }),
        response: { 200: ReceiptDetail, ...keyErrors(404) },
      },
    },
    async (request, reply) => {
      const wallet = merchantOf(request);
      try {
        // Already JSON, built by the database (see getReceiptJson): sent as it is.
        return sendJsonText(reply, await getReceiptJson(db, wallet, request.params.id, config.brandName, deps.chain?.usdc.address));
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

  app.post(
    '/api/receipts/status',
    {
      config: { auth: 'public' },
      attachValidation: true,
      schema: {
        tags: ['receipts'],
        summary: 'Record a tracking status (no credential)',
        description:
          'Tracking statuses (link_opened, buyer_logged_in, checkout_initialized) need no credential and are ' +
          'rate-limited per client address; they answer {ok: true} whether or not the receipt exists, and a status ' +
          "sent again is counted on the receipt's one history entry for it. Sensitive statuses (checkout_success, " +
          'refund_*) need the admin session.',
        body: StatusBody,
        response: {
          200: Type.Object({ ok: Type.Boolean(), ...Degraded }),
          400: errorRef,
          403: errorRef,
          404: errorRef,
          429: errorRef,
          500: errorRef,
        },
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const { receiptId, wallet, status } = body;
      if (typeof receiptId !== 'string' || receiptId.trim() === '') {
        throw new InvalidInput('receiptId is required', 'missing_receipt_id');
      }
      if (!isAddress(wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
      if (typeof status !== 'string' || status.trim() === '') throw new InvalidInput('status is required', 'missing_status');
      if (isSensitiveStatus(status)) {
        const session = await requireSession(request, deps.auth, siteOrigin).catch((err: unknown) => {
          // The spec answers 403 here, whether the session is missing or the CSRF token is wrong.
          if (err instanceof AppError && err.status === 401) {
            throw new Forbidden(`${status} can only be set from the admin app with a signed-in session`);
          }
          throw err;
        });
        await setSensitiveStatus(db, { wallet: normalizeWallet(wallet), receiptId, status, by: session.wallet });
        return reply.send({ ok: true });
      }
      if (!isTrackingStatus(status)) {
        throw new InvalidInput(`status must be one of ${TRACKING_STATUSES.join(', ')}`);
      }
      const merchant = normalizeWallet(wallet);
      // Statuses for a receipt with writes still in the journal queue behind them, keeping their order.
      if (!journal.holds(merchant, receiptId)) {
        try {
          await recordTrackingStatus(db, { wallet: merchant, receiptId, status });
          return reply.send({ ok: true });
        } catch (err) {
          // No credential is needed here, so the answer must not tell whether the receipt exists.
          if (err instanceof NotFound) return reply.send({ ok: true });
          if (!isDbDown(err)) throw err;
        }
      }
      await journal.recordTrackingStatus({ wallet: merchant, receiptId, status });
      return reply.send({ ok: true, degraded: true, reason: 'database_unavailable' });
    },
  );
}
