/** Refunds from the admin app: POST /api/receipts/refund and GET /api/receipts/:id/refunds. */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, PositiveUsd, TxHash, Usd, Wallet, WALLET } from './common.ts';
import { MAX_LINE_ITEMS, ReceiptId, ReceiptStatusSchema, RefundVerificationSchema } from './receipts.ts';

/** Why a refund's txHash did not prove it (400 invalid_input with this `reason`). */
export const REFUND_PROOF_FAILURES = ['not_mined', 'reverted', 'no_transfer', 'too_little', 'already_used'] as const;

export const RefundedItem = Type.Object({
  label: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
  priceUsd: Usd(),
  qty: Type.Optional(Type.Integer({ minimum: 1, description: '1 when omitted' })),
});

/**
 * The refund body, documented; the handler checks it itself (attachValidation) in the
 * specification's order so that each field answers its own code.
 */
export const RefundBody = Type.Object(
  {
    receiptId: ReceiptId('The receipt refunded (missing or empty: 400 missing_receipt_id)'),
    wallet: Type.String({ ...WALLET, description: 'The merchant wallet: the signed-in one (else 400 invalid_wallet; another wallet: 403)' }),
    buyer: Type.String({ ...WALLET, description: 'The wallet refunded (else 400 invalid_buyer)' }),
    usd: PositiveUsd({
      description: "Amount refunded, USD, at most two decimals; with the earlier refunds at most what the receipt took: its total, or what arrived when more arrived (else 400 invalid_usd)",
      examples: [3.5],
    }),
    items: Type.Optional(Type.Array(RefundedItem, { maxItems: MAX_LINE_ITEMS, description: 'The items refunded, for the record' })),
    txHash: Type.Optional(
      Type.Union([TxHash, Type.Null()], {
        description:
          "The refund's transaction: its transfer of the receipt's token to buyer, from the merchant's wallet, split or the receipt's payment address, " +
          'is checked on the chain (a transfer from anyone else: recorded unverified) and verified once CONFIRMATIONS deep. Omitted or null: recorded unverified',
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
export type RefundBody = Static<typeof RefundBody>;

export const RefundRecorded = Type.Object(
  {
    ok: Type.Literal(true),
    refundId: Type.String(),
    refundedUsd: Usd({ description: "The sum of the receipt's refunds now", examples: [3.5] }),
    status: ReceiptStatusSchema,
    verified: Type.Boolean({ description: "The refund carried txHash and its transfer from the merchant's own addresses is CONFIRMATIONS deep on the chain" }),
    verification: RefundVerificationSchema,
  },
  { description: 'The refund is recorded' },
);
export type RefundRecorded = Static<typeof RefundRecorded>;

export const Refund = Type.Object({
  id: Type.String(),
  receiptId: Type.String({ examples: ['order-1001'] }),
  buyer: Wallet,
  usd: PositiveUsd({ examples: [3.5] }),
  items: Type.Array(Type.Object({ label: Type.String(), priceUsd: Usd(), qty: Type.Integer({ minimum: 1 }) })),
  txHash: Nullable(TxHash),
  verified: Type.Boolean({ description: "Its transfer from the merchant's own addresses is CONFIRMATIONS deep on the chain" }),
  verification: RefundVerificationSchema,
  createdBy: Wallet,
  createdAt: Type.Integer({ description: 'Unix ms' }),
});
export type Refund = Static<typeof Refund>;

/** The token a refund is sent in from the merchant's wallet. */
export const RefundToken = Type.Object({
  chainId: Type.Integer({ examples: [31337] }),
  address: Wallet,
  symbol: Type.String({ examples: ['USDC'] }),
  decimals: Type.Integer({ examples: [6] }),
});
export type RefundToken = Static<typeof RefundToken>;

export const RefundList = Type.Object({
  refunds: Type.Array(Refund),
  token: Type.Union([RefundToken, Type.Null()], {
    description: "The receipts' token, for a refund sent from the merchant's wallet; null without a chain",
  }),
});
export type RefundList = Static<typeof RefundList>;
