/** Reading receipts: the merchant's list, one receipt with its history, and where a payment stands. */
import type { Deps } from '../../../deps.ts';
import { DatabaseUnavailable, NotFound } from '../../../domain/errors.ts';
import { findReceipt, getReceiptJson, getReceiptStatus, listReceiptsJson, NO_REFUNDS, paymentUrl } from '../../../domain/receipts.ts';
import { isDbDown } from '../../../db/client.ts';
import { merchantOf } from '../../../gateway/plugin.ts';
import { sendJsonText } from '../../json-text.ts';
import { keyErrors, security } from '../../../contract/common.ts';
import { ListReceiptsQuery, ReceiptDetail, ReceiptIdParams, ReceiptList, ReceiptStatusQuery, ReceiptStatusView } from '../../../contract/receipts.ts';
import type { App } from '../../app-type.ts';

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
        querystring: ListReceiptsQuery,
        response: {
          200: ReceiptList,
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
        querystring: ReceiptStatusQuery,
        response: {
          200: ReceiptStatusView,
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
        params: ReceiptIdParams,
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
