/** Refunds, from the admin app (session cookie + CSRF): record one, list a receipt's. */
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { listRefunds, parseRefund, refundChainOf, refundReceipt } from '../../../domain/refunds.ts';
import { Forbidden } from '../../../lib/errors.ts';
import { writeOf } from '../../idempotency.ts';
import { adminErrors, cookieAuth, errorRef } from '../../../contract/common.ts';
import { ReceiptIdParams } from '../../../contract/receipts.ts';
import { RefundBody, RefundList, RefundRecorded } from '../../../contract/refunds.ts';
import type { App } from '../../app-type.ts';

export function receiptRefundRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;

  app.post(
    '/api/receipts/refund',
    {
      config: { auth: 'session' },
      attachValidation: true,
      schema: {
        tags: ['admin'],
        summary: 'Refund a receipt, in full or in part',
        description:
          'With txHash the refund is checked on the chain before it is recorded: the transaction must be mined and ' +
          "successful and hold an ERC-20 Transfer of the receipt's token to buyer of at least usd, that no other refund " +
          'used; otherwise 400 invalid_input with `reason` not_mined, reverted, no_transfer, too_little or already_used, ' +
          'and nothing is recorded. Without txHash the refund is recorded unverified. 503 chain_unavailable: this ' +
          'instance cannot check a txHash now (no chain, or it did not answer); nothing was recorded.',
        security: cookieAuth,
        body: RefundBody,
        errorCodes: { 400: ['missing_receipt_id', 'invalid_wallet', 'invalid_buyer', 'invalid_usd'], 503: ['chain_unavailable'] },
        response: {
          200: RefundRecorded,
          ...adminErrors, 404: errorRef,
          503: errorRef,
        },
      },
    },
    async (request) => {
      const session = sessionOf(request);
      const parsed = parseRefund(request.body ?? {});
      if (parsed.wallet !== session.wallet) throw new Forbidden('You can refund only your own receipts');
      const result = await refundReceipt(db, { ...parsed, by: session.wallet }, refundChainOf(deps.chain, deps.config.confirmations), Date.now(), writeOf(request));
      return { ok: true, ...result };
    },
  );

  app.get(
    '/api/receipts/:id/refunds',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: "A receipt's refunds, and the token a refund is sent in",
        security: cookieAuth,
        params: ReceiptIdParams,
        response: {
          200: RefundList,
          ...adminErrors, 404: errorRef,
        },
      },
    },
    async (request) => ({
      refunds: await listRefunds(db, sessionOf(request).wallet, request.params.id),
      token: refundChainOf(deps.chain, deps.config.confirmations)?.token ?? null,
    }),
  );
}
