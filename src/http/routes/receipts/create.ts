/** Creating a receipt with a subscription key; journaled while the database is unreachable. */
import type { Deps } from '../../../deps.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { writeOf } from '../../idempotency.ts';
import { keyErrors, security } from '../../../contract/common.ts';
import { CreatedReceipt, CreateReceiptBody } from '../../../contract/receipts.ts';
import type { App } from '../../app-type.ts';

export function receiptCreateRoutes(app: App, deps: Deps): void {
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
    async (request, reply) => reply.status(201).send(await deps.receipts.create(merchantOf(request), request.body, writeOf(request))),
  );
}
