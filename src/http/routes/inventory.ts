import type { Deps } from '../../deps.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { writeOf } from '../idempotency.ts';
import { keyErrors, security } from '../../contract/common.ts';
import { InventoryList, InventorySaved, UpsertInventoryBody } from '../../contract/inventory.ts';
import type { App } from '../app-type.ts';

export function inventoryRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/inventory',
    {
      config: { auth: 'key', scope: 'inventory:read' },
      schema: {
        tags: ['inventory'],
        summary: "List the merchant's inventory, by sku",
        security,
        response: {
          200: InventoryList,
          ...keyErrors(),
        },
      },
    },
    async (request) => deps.inventory.list({ wallet: merchantOf(request) }),
  );

  app.post(
    '/api/inventory',
    {
      config: { auth: 'key', scope: 'inventory:write' },
      schema: {
        tags: ['inventory'],
        summary: 'Create an inventory item, or update the one with the same sku',
        description: '201 when the sku is new, 200 when an existing item was updated (its id stays).',
        security,
        body: UpsertInventoryBody,
        response: { 200: InventorySaved('An existing item was updated (its id stays)'), 201: InventorySaved('A new item was created'), ...keyErrors(400) },
      },
    },
    async (request, reply) => {
      const { created, item } = await deps.inventory.upsert({ wallet: merchantOf(request), input: request.body, write: writeOf(request) });
      return reply.status(created ? 201 : 200).send({ ok: true, item });
    },
  );
}
