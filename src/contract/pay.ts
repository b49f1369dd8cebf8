/**
 * The payment page's JSON API: /api/pay/:id, authorised by the payment URL's token (`t`) alone.
 */
import { Type, type Static } from '@sinclair/typebox';
import { BaseUnits, stringEnum, TxHash, Usd, Wallet } from './common.ts';
import { LineItemRef, ReceiptExceptionSchema, receiptStatus, ReceiptStatusSchema, ReturnUrl, TRACKING_STATUSES } from './receipts.ts';

export const PayParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'The receipt id, as in the payment URL', examples: ['order-1001'] }) });
export type PayParams = Static<typeof PayParams>;

export const PayQuery = Type.Object({
  t: Type.Optional(Type.String({ description: 'The token from the payment URL (without it nothing is found)', examples: ['v3K9cQ1xT2bY7nL0pR5sWg'] })),
});
export type PayQuery = Static<typeof PayQuery>;

/** What a buyer signs a gasless payment with: the token's EIP-712 domain, as read from the token. */
export const Gasless = Type.Object(
  {
    name: Type.String({ description: "The token's EIP-712 domain name, read from the token (eip712Domain(), else name())", examples: ['USD Coin'] }),
    version: Type.String({ description: "The token's EIP-712 domain version, read from the token (eip712Domain(), else version())", examples: ['2'] }),
  },
  {
    description:
      'The EIP-712 domain of the TransferWithAuthorization the buyer signs: {name, version, chainId, verifyingContract: tokenAddress}',
  },
);
export type Gasless = Static<typeof Gasless>;

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
  gasless: Type.Union([Gasless, Type.Null()], {
    description:
      'Pay without gas (POST /api/pay/{id}/authorization): present when the token supports EIP-3009 and this service can ' +
      "relay for this receipt (it holds a key to pay the gas, and the receipt's payment address is the version-2 one); " +
      'null otherwise, or while the node does not answer',
  }),
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
    returnUrl: Type.Union([ReturnUrl(''), Type.Null()], {
      description:
        "The receipt's returnUrl while its origin is still one the shop allows; null otherwise. The page links back to it " +
        '("Back to shop") once the receipt is completed, failed or expired',
    }),
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

// POST /api/pay/:id/authorization

export const AuthorizationBody = Type.Object(
  {
    from: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$', description: 'The payer, who signed' }),
    value: Type.String({ pattern: '^[1-9][0-9]{0,30}$', description: 'Token base units: exactly what is due (payment.due)' }),
    validAfter: Type.Integer({ minimum: 0, maximum: 2 ** 40, description: 'Unix seconds; must be in the past' }),
    validBefore: Type.Integer({ minimum: 0, maximum: 2 ** 40, description: "Unix seconds; at least 60 s from now, at most an hour past the receipt's expiresAt" }),
    nonce: Type.String({ pattern: '^0x[0-9a-fA-F]{64}$', description: 'The authorization nonce, 32 random bytes' }),
    signature: Type.String({ pattern: '^0x[0-9a-fA-F]{130}$', description: "65-byte eth_signTypedData_v4 signature of TransferWithAuthorization {from, to: payment.payTo, value, validAfter, validBefore, nonce} in the token's EIP-712 domain" }),
  },
  {
    examples: [
      {
        from: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
        value: '7000000',
        validAfter: 0,
        validBefore: 1767232800,
        nonce: '0x5f8a4b0a3c1e9d2f7b6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f',
        signature: `0x${'ab'.repeat(65)}`,
      },
    ],
  },
);
export type AuthorizationBody = Static<typeof AuthorizationBody>;

export const AuthorizationRelayed = Type.Object(
  { transactionHash: TxHash },
  { description: 'Submitted: the transaction that pays the payment address and sweeps it into the split (the chain worker then completes the receipt)' },
);
export type AuthorizationRelayed = Static<typeof AuthorizationRelayed>;
