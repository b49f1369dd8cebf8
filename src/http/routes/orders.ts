import type { Deps } from '../../deps.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { writeOf } from '../idempotency.ts';
import { keyErrors, security } from '../../contract/common.ts';
import { OrderBody, OrderCreated } from '../../contract/orders.ts';
import type { App } from '../app-type.ts';

export function orderRoutes(app: App, deps: Deps): void {
  app.post(
    '/api/orders',
    {
      config: { auth: 'key', scope: 'orders:create' },
      // A null list is a missing one: the domain answers items_required for both (see OrderBody).
      preValidation: (request, _reply, done) => {
        const body = request.body as { items?: unknown } | null | undefined;
        if (body?.items === null) delete body.items;
        done();
      },
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
        response: { 200: OrderCreated, ...keyErrors(400, 409) },
      },
    },
    async (request) => ({ ok: true, receipt: await deps.orders.create({ wallet: merchantOf(request), input: request.body, write: writeOf(request) }) }),
  );
}
