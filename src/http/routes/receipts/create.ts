/** Creating a receipt with a subscription key; journaled while the database is unreachable. */
import type { Deps } from '../../../deps.ts';
import { createReceipt, payTokenFor } from '../../../domain/receipts.ts';
import { isDbDown } from '../../../db/client.ts';
import { loadJwtKey } from '../../../auth/secret.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { writeOf } from '../../idempotency.ts';
import { keyErrors, security } from '../../../contract/common.ts';
import { CreatedReceipt, CreateReceiptBody } from '../../../contract/receipts.ts';
import type { App } from '../../app-type.ts';

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
        body: CreateReceiptBody,
        response: { 201: CreatedReceipt, ...keyErrors(400, 409) },
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
