/** Orders priced from the inventory: POST /api/orders. */
import { Type, type Static } from '@sinclair/typebox';
import { HANDLER_CHECKS } from './common.ts';
import { LineItemRef, MAX_LINE_ITEMS, MetadataRef, RETURN_URL_RULE, ReturnUrl, ReturnUrlAnswer } from './receipts.ts';

/** The most of one item an order line takes (src/domain/pricing.ts). */
export const MAX_ORDER_QTY = 1_000_000;

export const OrderItem = Type.Object({
  sku: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Inventory item id, instead of sku' })),
  qty: Type.Integer({ minimum: 1, maximum: MAX_ORDER_QTY }),
});
export type OrderItem = Static<typeof OrderItem>;

/**
 * `items` is required and holds at least one line, but the handler checks that itself so that a
 * missing, empty or null list answers its own code, items_required (the route turns null into
 * missing before validation); the document shows the rule.
 */
export const OrderBody = Type.Object(
  {
    items: Type.Optional(
      Type.Array(OrderItem, {
        maxItems: MAX_LINE_ITEMS,
        description: 'At least one {sku, qty} or {id, qty} (else 400 items_required); lines naming the same item are merged',
        [HANDLER_CHECKS]: { minItems: 1 },
      }),
    ),
    jurisdictionCode: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: "A code from the shop's tax table" })),
    taxRate: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1, description: 'Fraction: 0.0825 means 8.25%; wins over the jurisdiction rate' }),
    ),
    taxComponents: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 20 })),
    metadata: Type.Optional(MetadataRef),
    returnUrl: Type.Optional(ReturnUrl(RETURN_URL_RULE)),
  },
  {
    [HANDLER_CHECKS]: { required: ['items'] },
    examples: [{ items: [{ sku: 'espresso', qty: 2 }], metadata: { shopOrder: 'SO-20417' }}],
  },
);
/** What a client sends: items are required. */
export type OrderBody = Omit<Static<typeof OrderBody>, 'items'> & { items: OrderItem[] };

export const OrderReceipt = Type.Object({
  receiptId: Type.String(),
  totalUsd: Type.Number(),
  currency: Type.String(),
  lineItems: Type.Array(LineItemRef),
  createdAt: Type.Integer({ description: 'Unix ms' }),
  status: Type.String(),
  brandName: Type.String(),
  paymentUrl: Type.String(),
  jurisdictionCode: Type.Union([Type.String(), Type.Null()]),
  taxRate: Type.Number({ description: 'Fraction: 0.0825 means 8.25%' }),
  taxComponents: Type.Array(Type.String()),
  metadata: MetadataRef,
  returnUrl: ReturnUrlAnswer,
});
export type OrderReceipt = Static<typeof OrderReceipt>;

export const OrderCreated = Type.Object({ ok: Type.Boolean(), receipt: OrderReceipt });
export type OrderCreated = Static<typeof OrderCreated>;
