/** Reading receipts: the merchant's list, one receipt with its history, and where a payment stands. */
import type { Deps } from '../../../deps.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { sendAnswer } from '../../json-text.ts';
import { keyErrors, security } from '../../../contract/common.ts';
import { ListReceiptsQuery, ReceiptDetail, ReceiptIdParams, ReceiptList, ReceiptStatusQuery, ReceiptStatusView } from '../../../contract/receipts.ts';
import type { App } from '../../app-type.ts';

export function receiptReadRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/receipts',
    {
      config: { auth: 'key', scope: 'receipts:read' },
      schema: {
        tags: ['receipts'],
        summary: 'List receipts, newest first, a page at a time',
        security,
        querystring: ListReceiptsQuery,
        response: {
          200: ReceiptList,
          ...keyErrors(400),
        },
      },
    },
    // Already JSON, built by the database (src/db/receipt-store.ts ReceiptStore.pageJson): sent as it is.
    async (request, reply) => {
      const q = request.query;
      const page = {
        limit: q.limit ?? 100,
        startingAfter: q.starting_after,
        status: q.status,
        createdGte: q.created_gte,
        createdLte: q.created_lte,
      };
      return sendAnswer(reply, await deps.receipts.list(merchantOf(request), page));
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
        querystring: ReceiptStatusQuery,
        response: {
          200: ReceiptStatusView,
          ...keyErrors(400, 404),
        },
      },
    },
    async (request) => deps.receipts.status(merchantOf(request), request.query.receiptId),
  );

  app.get(
    '/api/receipts/:id',
    {
      config: { auth: 'key', scope: 'receipts:read' },
      schema: {
        tags: ['receipts'],
        summary: 'One receipt with its status history',
        security,
        params: ReceiptIdParams,
        response: { 200: ReceiptDetail, ...keyErrors(404) },
      },
    },
    async (request, reply) =>
      sendAnswer(
        reply,
        await deps.receipts.detail(merchantOf(request), request.params.id, {
          // The admin app (a session, no key) shows the payment link again on the receipt's page.
          withPaymentUrl: request.principal === null && request.session !== null,
        }),
      ),
  );
}
