/** Refunds, from the admin app (session cookie + CSRF): record one, list a receipt's. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { listRefunds, parseRefund, refundChainOf, refundReceipt } from '../../../domain/refunds.ts';
import { Forbidden } from '../../../domain/errors.ts';
import { MAX_LINE_ITEMS } from '../../../domain/receipts.ts';
import { writeOf } from '../../idempotency.ts';
import { adminErrors, cookieAuth, errorRef, PositiveUsd, ReceiptId, ReceiptStatus, TxHash, Usd, Wallet, WALLET } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

/**
 * The refund body, documented; the handler checks it itself (attachValidation) in the
 * specification's order so that each field answers its own code.
 */
const RefundBody = Type.Object(
  {
    receiptId: ReceiptId('The receipt refunded (missing or empty: 400 missing_receipt_id)'),
    wallet: Type.String({ ...WALLET, description: 'The merchant wallet: the signed-in one (else 400 invalid_wallet; another wallet: 403)' }),
    buyer: Type.String({ ...WALLET, description: 'The wallet refunded (else 400 invalid_buyer)' }),
    usd: PositiveUsd({
      description: "Amount refunded, USD, at most two decimals; with the earlier refunds at most the receipt's total (else 400 invalid_usd)",
      examples: [3.5],
    }),
    items: Type.Optional(
      Type.Array(
        Type.Object({
          label: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
          priceUsd: Usd(),
          qty: Type.Optional(Type.Integer({ minimum: 1, description: '1 when omitted' })),
        }),
        { maxItems: MAX_LINE_ITEMS, description: 'The items refunded, for the record' },
      ),
    ),
    txHash: Type.Optional(
      Type.Union([TxHash, Type.Null()], {
        description: "The refund's transaction: its transfer of the receipt's token to buyer is checked on the chain. Omitted or null: recorded unverified",
      }),
    ),
  },
  {
    examples: [
      {
        receiptId: 'order-1001',
        wallet: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
        buyer: '0x90f79bf6eb2c4f870365e785982e1f101e93b906',
        usd: 3.5,
        items: [{ label: 'Flat white', priceUsd: 3.5, qty: 1 }],
      },
    ],
  },
);

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
          200: Type.Object(
            {
              ok: Type.Literal(true),
              refundId: Type.String(),
              refundedUsd: Usd({ description: "The sum of the receipt's refunds now", examples: [3.5] }),
              status: ReceiptStatus,
              verified: Type.Boolean({ description: 'The refund carried txHash and its transfer was found on the chain' }),
            },
            { description: 'The refund is recorded' },
          ),
          ...adminErrors,
          503: errorRef,
        },
      },
    },
    async (request) => {
      const session = sessionOf(request);
      const parsed = parseRefund((request.body ?? {}) as Record<string, unknown>);
      if (parsed.wallet !== session.wallet) throw new Forbidden('You can refund only your own receipts');
      const result = await refundReceipt(db, { ...parsed, by: session.wallet }, refundChainOf(deps.chain), Date.now(), writeOf(request));
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
        params: Type.Object({ id: Type.String({ description: 'The receipt id', examples: ['order-1001'] }) }),
        response: {
          200: Type.Object({
            refunds: Type.Array(
              Type.Object({
                id: Type.String(),
                receiptId: Type.String({ examples: ['order-1001'] }),
                buyer: Wallet,
                usd: PositiveUsd({ examples: [3.5] }),
                items: Type.Array(Type.Object({ label: Type.String(), priceUsd: Usd(), qty: Type.Integer({ minimum: 1 }) })),
                txHash: Type.Union([TxHash, Type.Null()]),
                verified: Type.Boolean({ description: 'Its transfer was found on the chain' }),
                createdBy: Wallet,
                createdAt: Type.Integer({ description: 'Unix ms' }),
              }),
            ),
            token: Type.Union(
              [
                Type.Object({
                  chainId: Type.Integer({ examples: [31337] }),
                  address: Wallet,
                  symbol: Type.String({ examples: ['USDC'] }),
                  decimals: Type.Integer({ examples: [6] }),
                }),
                Type.Null(),
              ],
              { description: "The receipts' token, for a refund sent from the merchant's wallet; null without a chain" },
            ),
          }),
          ...adminErrors,
        },
      },
    },
    async (request) => ({
      refunds: await listRefunds(db, sessionOf(request).wallet, request.params.id),
      token: refundChainOf(deps.chain)?.token ?? null,
    }),
  );
}
