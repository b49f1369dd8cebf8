/** POS terminal receipts from the admin app: POST /api/receipts/terminal. */
import { Type, type Static } from '@sinclair/typebox';
import { PositiveUsd } from './common.ts';
import { LineItemRef, ReceiptStatusSchema } from './receipts.ts';
import { TaxRate } from './shop.ts';

/** The terminal body, documented; the handler checks it itself (amountUsd answers invalid_amount). */
export const TerminalBody = Type.Object(
  {
    amountUsd: PositiveUsd({ description: 'Keypad amount, USD, at most two decimals (else 400 invalid_amount)', examples: [12.5] }),
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', default: 'Sale', description: 'Line label' })),
    currency: Type.Optional(Type.Literal('USD', { description: 'Receipts are priced in US dollars and paid in USDC' })),
    jurisdictionCode: Type.Optional(Type.String({ minLength: 1, description: "A code from the shop's tax table" })),
    taxRate: Type.Optional(TaxRate('Wins over the jurisdiction rate')),
    taxComponents: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { description: 'Names of the taxes the rate is made of' })),
  },
  { examples: [{ amountUsd: 12.5, label: 'Sale', currency: 'USD' }] },
);
export type TerminalBody = Static<typeof TerminalBody>;

export const TerminalReceipt = Type.Object({
  receiptId: Type.String({ examples: ['t-01jh5x2k8q'] }),
  totalUsd: PositiveUsd({ examples: [12.5] }),
  currency: Type.String({ examples: ['USD'] }),
  lineItems: Type.Array(LineItemRef),
  createdAt: Type.Integer({ description: 'Unix ms' }),
  status: ReceiptStatusSchema,
  paymentUrl: Type.String({ description: '{SITE_URL}/pay/<id>?t=<token>' }),
  jurisdictionCode: Type.Union([Type.String(), Type.Null()]),
  taxRate: Type.Number({ minimum: 0, maximum: 1, examples: [0] }),
  taxComponents: Type.Array(Type.String()),
});
export type TerminalReceipt = Static<typeof TerminalReceipt>;

export const TerminalCreated = Type.Object(
  { ok: Type.Literal(true), receipt: TerminalReceipt },
  { description: 'The terminal receipt, status generated: show the buyer its paymentUrl' },
);
export type TerminalCreated = Static<typeof TerminalCreated>;
