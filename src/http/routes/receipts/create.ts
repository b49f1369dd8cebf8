/** Creating a receipt with a subscription key; journaled while the database is unreachable. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { createReceipt, MAX_EXPIRES_IN_MINUTES, MAX_LINE_ITEMS, payTokenFor } from '../../../domain/receipts.ts';
import { isDbDown } from '../../../db/client.ts';
import { loadJwtKey } from '../../../auth/secret.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { writeOf } from '../../idempotency.ts';
import { answerEnum, Degraded, keyErrors, LineItem, PositiveUsd, ReceiptId, security } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

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

export function receiptCreateRoutes(app: App, deps: Deps): void {
  const { database, config, journal } = deps;
  const db = database.db;
  const payTokenSecret = loadJwtKey(config);

  app.post(
    '/api/receipts',
    {
      config: { auth: 'key', scope: 'receipts:write' },
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
}
