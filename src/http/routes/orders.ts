import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { createOrder } from '../../domain/orders.ts';
import { MAX_ORDER_QTY } from '../../domain/pricing.ts';
import { MAX_LINE_ITEMS } from '../../domain/receipts.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { writeOf } from '../idempotency.ts';
import { keyErrors, security } from '../schemas.ts';
import type { App } from '../app-type.ts';

const OrderItem = Type.Object({
  sku: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Inventory item id, instead of sku' })),
  qty: Type.Integer({ minimum: 1, maximum: MAX_ORDER_QTY }),
});

const OrderBody = Type.Object({
  items: Type.Optional(
    Type.Union([Type.Array(OrderItem, { maxItems: MAX_LINE_ITEMS }), Type.Null()], {
      description: 'At least one {sku, qty} or {id, qty}; lines naming the same item are merged',
    }),
  ),
  jurisdictionCode: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: "A code from the shop's tax table" })),
  taxRate: Type.Optional(
    Type.Number({ minimum: 0, maximum: 1, description: 'Fraction: 0.0825 means 8.25%; wins over the jurisdiction rate' }),
  ),
  taxComponents: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 20 })),
});

const OrderReceipt = Type.Object({
  receiptId: Type.String(),
  totalUsd: Type.Number(),
  currency: Type.String(),
  lineItems: Type.Array(Type.Ref('LineItem')),
  createdAt: Type.Integer({ description: 'Unix ms' }),
  status: Type.String(),
  brandName: Type.String(),
  paymentUrl: Type.String(),
  jurisdictionCode: Type.Union([Type.String(), Type.Null()]),
  taxRate: Type.Number({ description: 'Fraction: 0.0825 means 8.25%' }),
  taxComponents: Type.Array(Type.String()),
});

export function orderRoutes(app: App, deps: Deps): void {
  const { database, config } = deps;
  const ctx = {
    siteUrl: config.siteUrl,
    fallbackBrand: config.brandName,
    platformRecipientAddress: config.platformRecipientAddress,
    receiptTtlMinutes: config.receiptTtlMinutes,
  };

  app.post(
    '/api/orders',
    {
      config: { auth: 'key', scope: 'orders:create' },
      schema: {
        tags: ['orders'],
        summary: 'Create an order from inventory: a pending receipt with tax and fee lines',
        description:
          'Prices come from inventory. Tax applies to taxable lines at taxRate, or at the rate of jurisdictionCode in the ' +
          "shop's tax table; the shop's processingFeePct adds a fee line on subtotal + tax; cents round half up. Stock is " +
          'reserved atomically (409 out_of_stock when short). Errors: 400 invalid_input, items_required, ' +
          'inventory_item_not_found, platform_recipient_not_configured; 403 split_required; 503 database_unavailable ' +
          '(orders are never queued while the database is away).',
        security,
        body: OrderBody,
        response: { 200: Type.Object({ ok: Type.Boolean(), receipt: OrderReceipt }), ...keyErrors(400, 409) },
      },
    },
    async (request) => ({ ok: true, receipt: await createOrder(database.db, ctx, merchantOf(request), request.body, Date.now(), writeOf(request)) }),
  );
}
