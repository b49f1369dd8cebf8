import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { AppError, DatabaseUnavailable, Forbidden, InvalidInput, NotFound } from '../../domain/errors.ts';
import {
  createReceipt,
  findReceipt,
  getReceiptJson,
  getReceiptStatus,
  isSensitiveStatus,
  isTrackingStatus,
  listReceiptsJson,
  payTokenFor,
  paymentUrl,
  MAX_EXPIRES_IN_MINUTES,
  MAX_LINE_ITEMS,
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
import { writeOf } from '../idempotency.ts';
import {
  Degraded,
  errorRef,
  keyErrors,
  LineItem,
  PaymentState,
  PositiveUsd,
  ReceiptId,
  ReceiptStatus,
  RefundedUsd,
  security,
  SettableStatus,
  answerEnum,
  TxHash,
  Usd,
  Wallet,
  WALLET,
} from '../schemas.ts';
import type { App } from './index.ts';

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

const CreateBody = Type.Object(
  {
    id: ReceiptId('Assigned by the caller; unique per merchant'),
    lineItems: Type.Array(LineItem, { minItems: 1, maxItems: MAX_LINE_ITEMS }),
    totalUsd: PositiveUsd({ description: 'Must equal the sum of priceUsd × qty (qty 1 when omitted), and be above zero' }),
    expiresInMinutes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_EXPIRES_IN_MINUTES,
        description: 'Minutes the receipt may be paid in; RECEIPT_TTL_MINUTES (60) by default',
      }),
    ),
  },
  {
    examples: [
      {
        id: 'order-1001',
        lineItems: [
          { label: 'Flat white', priceUsd: 3.5, qty: 2 },
          { label: 'Croissant', priceUsd: 2.25 },
        ],
        totalUsd: 9.25,
      },
    ],
  },
);

const Created = Type.Object(
  {
    id: Type.String({ examples: ['order-1001'] }),
    paymentUrl: Type.String({ description: '{SITE_URL}/pay/<id>?t=<token>: the only way to the payment page' }),
    status: answerEnum(['pending']),
    ...Degraded,
  },
  { description: 'The receipt was created (or, for the same id and body, had been): show the buyer paymentUrl' },
);

/**
 * Documents the body; the handler checks it itself (attachValidation), in the specification's
 * order, so that each field answers its own code: missing_receipt_id, invalid_wallet, missing_status.
 */
const StatusBody = Type.Object(
  {
    receiptId: ReceiptId('The receipt (missing or empty: 400 missing_receipt_id)'),
    wallet: Type.String({ ...WALLET, description: "The merchant's wallet, 0x-prefixed 40 hex (else 400 invalid_wallet)" }),
    status: SettableStatus(
      `A tracking status (${TRACKING_STATUSES.join(', ')}), with no credential; or a sensitive one (checkout_success, ` +
        'refund_*), with the admin session and its x-csrf-token. Missing or empty: 400 missing_status',
    ),
  },
  { examples: [{ receiptId: 'order-1001', wallet: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc', status: 'link_opened' }] },
);

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

  app.post(
    '/api/receipts',
    {
      config: { scope: 'receipts:write' },
      schema: {
        tags: ['receipts'],
        summary: 'Create a receipt',
        description:
          'Idempotent: the same id with the same body answers as the first call did; the same id with a different body is 409 conflict. ' +
          'While the database is unreachable the receipt is journaled and the answer carries degraded: true; it reaches the ' +
          'database, exactly once, when it is back.',
        security,
        body: CreateBody,
        response: { 201: Created, ...keyErrors(400, 409) },
      },
    },
    async (request, reply) => {
      const wallet = merchantOf(request);
      const params = { wallet, ...request.body };
      const write = writeOf(request);
      // One token and write id for both paths: a create whose commit landed but whose answer was
      // lost (or that timed out) replays as itself.
      const attempt = { payToken: payTokenFor(payTokenSecret, wallet, params.id), createdAt: Date.now(), ttlMinutes: config.receiptTtlMinutes };
      // While the journal still holds this receipt, it answers (same paymentUrl, or 409).
      if (!journal.holds(wallet, params.id)) {
        try {
          return reply.status(201).send(await createReceipt(db, config.siteUrl, params, { ...attempt, writeId: write.id }));
        } catch (err) {
          if (!isDbDown(err)) throw err;
        }
      }
      const created = await journal.recordReceipt(params, attempt, write);
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
      config: { scope: 'receipts:read' },
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
        errorCodes: { 400: ['missing_receipt_id', 'invalid_wallet', 'missing_status'] },
        response: {
          200: Type.Object(
            { ok: Type.Literal(true), ...Degraded },
            { description: 'Recorded (a tracking status answers so whether or not the receipt exists); degraded: true when journaled' },
          ),
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
        await setSensitiveStatus(db, { wallet: normalizeWallet(wallet), receiptId, status, by: session.wallet }, Date.now(), writeOf(request));
        return reply.send({ ok: true });
      }
      if (!isTrackingStatus(status)) {
        throw new InvalidInput(`status must be one of ${TRACKING_STATUSES.join(', ')}`);
      }
      const merchant = normalizeWallet(wallet);
      const write = writeOf(request);
      // Statuses for a receipt with writes still in the journal queue behind them, keeping their order.
      if (!journal.holds(merchant, receiptId)) {
        try {
          await recordTrackingStatus(db, { wallet: merchant, receiptId, status }, write);
          return reply.send({ ok: true });
        } catch (err) {
          // No credential is needed here, so the answer must not tell whether the receipt exists.
          if (err instanceof NotFound) return reply.send({ ok: true });
          if (!isDbDown(err)) throw err;
        }
      }
      // Also after a commit whose outcome is unknown: the journal's copy carries the same write
      // id, so it changes nothing at replay if the first one landed.
      await journal.recordTrackingStatus({ wallet: merchant, receiptId, status }, write);
      return reply.send({ ok: true, degraded: true, reason: 'database_unavailable' });
    },
  );
}
