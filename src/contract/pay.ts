/**
 * The payment page's JSON API: /api/pay/:id, authorised by the payment URL's token (`t`) alone.
 */
import { Type, type Static } from '@sinclair/typebox';
import { BaseUnits, stringEnum, TxHash, Usd, Wallet } from './common.ts';
import { LineItemRef, ReceiptExceptionSchema, receiptStatus, ReceiptStatusSchema, TRACKING_STATUSES } from './receipts.ts';

export const PayParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'The receipt id, as in the payment URL', examples: ['order-1001'] }) });
export type PayParams = Static<typeof PayParams>;

export const PayQuery = Type.Object({
  t: Type.Optional(Type.String({ description: 'The token from the payment URL (without it nothing is found)', examples: ['v3K9cQ1xT2bY7nL0pR5sWg'] })),
});
export type PayQuery = Static<typeof PayQuery>;

/** How to pay: the token, the receipt's own address and the amounts, token base units. */
export const Payment = Type.Object({
  chainId: Type.Integer({ examples: [31337] }),
  tokenAddress: Wallet,
  tokenSymbol: Type.String({ examples: ['USDC'] }),
  tokenDecimals: Type.Integer({ examples: [6] }),
  payTo: Type.Union([Wallet, Type.Null()], {
    description: "The receipt's own payment address, the only address the buyer pays; null while the merchant has no split",
  }),
  splitAddress: Type.Union([Wallet, Type.Null()], { description: "The merchant's split, where payments are swept" }),
  amount: BaseUnits('The total, token base units'),
  paid: BaseUnits("What the receipt's transfers of the token brought so far, token base units"),
  due: BaseUnits('What is still missing, token base units'),
});
export type Payment = Static<typeof Payment>;

export const PaymentView = Type.Object(
  {
    receiptId: Type.String({ examples: ['order-1001'] }),
    brandName: Type.String({ examples: ['Corner Café'] }),
    lineItems: Type.Array(LineItemRef),
    totalUsd: Usd({ examples: [7] }),
    currency: Type.String({ examples: ['USD'] }),
    status: ReceiptStatusSchema,
    exception: ReceiptExceptionSchema,
    expiresAt: Type.Integer({ description: 'Unix ms after which a receipt with nothing received fails (expired)', examples: [1767229200000] }),
    transactionHash: Type.Union([TxHash, Type.Null()]),
    allowedEmbedOrigins: Type.Array(Type.String(), { description: 'Parent origins the page may post status messages to' }),
    payment: Type.Union([Payment, Type.Null()], { description: 'How to pay; null when this instance runs without a chain' }),
  },
  { description: 'What the payment page shows' },
);
export type PaymentView = Static<typeof PaymentView>;

export const PageStatusBody = Type.Object({ status: stringEnum(TRACKING_STATUSES) }, { examples: [{ status: 'link_opened' }] });
export type PageStatusBody = Static<typeof PageStatusBody>;

export const PageStatusRecorded = Type.Object({ status: receiptStatus("The receipt's status afterwards") }, { description: 'Recorded' });
export type PageStatusRecorded = Static<typeof PageStatusRecorded>;

export const TransactionHintBody = Type.Object(
  { transactionHash: TxHash },
  { examples: [{ transactionHash: '0x8f2a55949038a9610f50fb23b5883af3b4ecb3c3bb792cbcefbd1542c692be63' }] },
);
export type TransactionHintBody = Static<typeof TransactionHintBody>;

export const HintNoted = Type.Object({ status: receiptStatus("The receipt's status now") }, { description: 'Noted: the chain worker looks sooner' });
export type HintNoted = Static<typeof HintNoted>;
