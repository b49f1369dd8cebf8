/** Schemas shared by several routes; each also appears once in the OpenAPI document. */
import { Type, type TSchema } from '@sinclair/typebox';

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'Machine-readable error code' }),
    message: Type.String({ description: 'What went wrong, for a person' }),
    resetAt: Type.Optional(Type.Integer({ description: 'With rate_limited: Unix ms when the budget resets' })),
    reason: Type.Optional(Type.String()),
  },
  { $id: 'Error', title: 'Error' },
);

export const errorRef = Type.Ref('Error');

/** Standard error responses for a route that needs a subscription key. */
export function keyErrors(...extra: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = { 401: errorRef, 403: errorRef, 429: errorRef, 503: errorRef };
  for (const s of extra) out[s] = errorRef;
  return out;
}

export const Wallet = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$', description: '0x-prefixed, 40 hex digits' });

export const LineItem = Type.Object(
  {
    label: Type.String(),
    priceUsd: Type.Number(),
    qty: Type.Optional(Type.Integer()),
  },
  { $id: 'LineItem', title: 'LineItem' },
);

/** How a receipt's payment stands: on the list, the detail, the status answer (src/payments/states.ts). */
export const ReceiptExceptionSchema = Type.Union(
  [Type.Literal('underpaid'), Type.Literal('overpaid'), Type.Literal('wrong_token'), Type.Literal('expired'), Type.Literal('paid_late'), Type.Null()],
  { description: 'Beside the status: underpaid, overpaid, wrong_token, expired or paid_late; null when the payment is as asked' },
);

export const PaymentState = {
  exception: ReceiptExceptionSchema,
  expiresAt: Type.Integer({ description: 'Unix ms; a receipt with nothing received by then fails with exception expired' }),
  amountPaid: Type.String({ description: "What the receipt's payment address received in its token, token base units (USDC: 6 decimals)" }),
  amountDue: Type.String({ description: 'What is still missing, token base units' }),
};

/** The sum of a receipt's refunds; a receipt keeps its status until they cover its total (then refunded). */
export const RefundedUsd = Type.Number({
  description: "The sum of the receipt's refunds, USD; below the total the receipt keeps its status, at the total it is refunded",
});

export const Receipt = Type.Object(
  {
    receiptId: Type.String(),
    totalUsd: Type.Number(),
    currency: Type.String(),
    lineItems: Type.Array(Type.Ref('LineItem')),
    createdAt: Type.Integer({ description: 'Unix ms' }),
    brandName: Type.String(),
    status: Type.String(),
    ...PaymentState,
    refundedUsd: RefundedUsd,
  },
  { $id: 'Receipt', title: 'Receipt' },
);

export const Degraded = {
  degraded: Type.Optional(Type.Boolean()),
  reason: Type.Optional(Type.String()),
};

export const security = [{ subscriptionKey: [] }];

export const sharedSchemas = [ErrorBody, LineItem, Receipt];
