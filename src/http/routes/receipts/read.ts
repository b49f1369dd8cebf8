/** Reading receipts: the merchant's list, one receipt with its history, and where a payment stands. */
import type { Deps } from '../../../deps.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { sendAnswer } from '../../json-text.ts';
import { keyErrors, security } from '../../../contract/common.ts';
import { ListReceiptsQuery, ReceiptDetail, type Receipt, ReceiptIdParams, ReceiptList, ReceiptStatusQuery, ReceiptStatusView } from '../../../contract/receipts.ts';
import type { App } from '../../app-type.ts';
import { csvChunks, csvHeader, jsonCell, type CsvColumn } from '../../../lib/csv.ts';
import { usdToCents } from '../../../lib/money.ts';
import { jsonOrCsv, sendCsv } from '../../csv-reply.ts';

/** GET /api/receipts?format=csv: a row per receipt, the list's fields, amounts as the JSON has them plus cents. */
const RECEIPT_CSV: CsvColumn<Receipt>[] = [
  { name: 'receipt_id', value: (r) => r.receiptId, text: true },
  { name: 'created_at', value: (r) => r.createdAt },
  { name: 'created_at_iso', value: (r) => new Date(r.createdAt).toISOString() },
  { name: 'status', value: (r) => r.status, text: true },
  { name: 'exception', value: (r) => r.exception },
  { name: 'currency', value: (r) => r.currency },
  { name: 'total_usd', value: (r) => r.totalUsd },
  { name: 'total_cents', value: (r) => usdToCents(r.totalUsd) },
  { name: 'refunded_usd', value: (r) => r.refundedUsd },
  { name: 'refunded_cents', value: (r) => usdToCents(r.refundedUsd) },
  { name: 'amount_paid', value: (r) => r.amountPaid },
  { name: 'amount_due', value: (r) => r.amountDue },
  { name: 'expires_at', value: (r) => r.expiresAt },
  { name: 'brand_name', value: (r) => r.brandName, text: true },
  { name: 'return_url', value: (r) => r.returnUrl, text: true },
  { name: 'line_items', value: (r) => jsonCell(r.lineItems), text: true },
  { name: 'metadata', value: (r) => jsonCell(r.metadata), text: true },
];

export function receiptReadRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/receipts',
    {
      config: { auth: 'key', scope: 'receipts:read' },
      schema: {
        tags: ['receipts'],
        summary: 'List receipts, newest first, a page at a time',
        description:
          'format=csv exports every receipt the filters match (status, created_gte, created_lte, and starting_after to begin ' +
          'after a receipt), newest first, all pages streamed as one text/csv download with a header row: receipt_id, ' +
          'created_at (Unix ms), created_at_iso, status, exception, currency, total_usd and total_cents, refunded_usd and ' +
          'refunded_cents, amount_paid and amount_due (token base units, as the JSON has them), expires_at, brand_name, ' +
          'return_url, line_items and metadata (JSON text). Text a spreadsheet would run as a formula is prefixed with an ' +
          "apostrophe. An unreachable database is 503 (the JSON list answers empty with degraded: true instead).",
        security,
        querystring: ListReceiptsQuery,
        response: {
          200: jsonOrCsv('One page of receipts (JSON), or every matching receipt as CSV', ReceiptList, csvHeader(RECEIPT_CSV)),
          ...keyErrors(400),
        },
      },
    },
    // Already JSON, built by the database (src/db/receipt-store.ts ReceiptStore.pageJson): sent as it is.
    async (request, reply) => {
      const q = request.query;
      const filters = { startingAfter: q.starting_after, status: q.status, createdGte: q.created_gte, createdLte: q.created_lte };
      if (q.format === 'csv') {
        const pages = await deps.receipts.exportPages(merchantOf(request), filters);
        return sendCsv(reply, `receipts-${Date.now()}.csv`, csvChunks(RECEIPT_CSV, pages));
      }
      return sendAnswer(reply, await deps.receipts.list(merchantOf(request), { limit: q.limit ?? 100, ...filters }));
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
