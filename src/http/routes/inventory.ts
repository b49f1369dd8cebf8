import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { isDbDown } from '../../db/client.ts';
import { listInventory, MAX_STOCK, upsertInventoryItem } from '../../domain/inventory.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { Degraded, keyErrors, security } from '../schemas.ts';
import type { App } from './index.ts';

const InventoryItem = Type.Object({
  id: Type.String({ description: 'Stable identifier, assigned at creation; orders may name it instead of sku' }),
  sku: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  category: Type.Optional(Type.String()),
  priceUsd: Type.Number(),
  stockQty: Type.Integer({ description: '-1 means unlimited' }),
  taxable: Type.Boolean(),
  createdAt: Type.Integer({ description: 'Unix ms' }),
  updatedAt: Type.Integer({ description: 'Unix ms' }),
});

const UpsertBody = Type.Object({
  sku: Type.String({ minLength: 1, maxLength: 64, description: 'Unique per merchant; an existing sku is updated' }),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  priceUsd: Type.Number({ minimum: 0, description: 'Unit price in USD, at most two decimals' }),
  stockQty: Type.Optional(
    Type.Integer({
      minimum: -1,
      maximum: MAX_STOCK,
      description: '-1 means unlimited (the default on creation); omitted on update keeps the stored value',
    }),
  ),
  taxable: Type.Optional(Type.Boolean({ description: 'true on creation when omitted; omitted on update keeps the stored value' })),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()], { description: 'null clears it' })),
  category: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()], { description: 'null clears it' })),
});

const Saved = Type.Object({ ok: Type.Boolean(), item: InventoryItem });

export function inventoryRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;

  app.get(
    '/api/inventory',
    {
      config: { scope: 'inventory:read' },
      schema: {
        tags: ['inventory'],
        summary: "List the merchant's inventory, by sku",
        security,
        response: { 200: Type.Object({ items: Type.Array(InventoryItem), ...Degraded }), ...keyErrors() },
      },
    },
    async (request) => {
      const wallet = merchantOf(request);
      try {
        return { items: await listInventory(db, wallet) };
      } catch (err) {
        if (!isDbDown(err)) throw err;
        return { items: [], degraded: true, reason: 'database_unavailable' };
      }
    },
  );

  app.post(
    '/api/inventory',
    {
      config: { scope: 'inventory:write' },
      schema: {
        tags: ['inventory'],
        summary: 'Create an inventory item, or update the one with the same sku',
        description: '201 when the sku is new, 200 when an existing item was updated (its id stays).',
        security,
        body: UpsertBody,
        response: { 200: Saved, 201: Saved, ...keyErrors(400) },
      },
    },
    async (request, reply) => {
      const { created, item } = await upsertInventoryItem(db, merchantOf(request), request.body);
      return reply.status(created ? 201 : 200).send({ ok: true, item });
    },
  );
}
