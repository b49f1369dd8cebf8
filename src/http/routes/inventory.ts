import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { isDbDown } from '../../db/client.ts';
import { listInventory, MAX_STOCK, upsertInventoryItem } from '../../domain/inventory.ts';
import { merchantOf } from '../../gateway/plugin.ts';
import { writeOf } from '../idempotency.ts';
import { Degraded, keyErrors, security, Usd } from '../schemas.ts';
import type { App } from '../app-type.ts';

const InventoryItem = Type.Object({
  id: Type.String({ description: 'Stable identifier, assigned at creation; orders may name it instead of sku', examples: ['inv_7Hq2xK9mPw'] }),
  sku: Type.String({ examples: ['espresso'] }),
  name: Type.String({ examples: ['Espresso'] }),
  description: Type.Optional(Type.String()),
  category: Type.Optional(Type.String()),
  priceUsd: Usd({ examples: [3] }),
  stockQty: Type.Integer({ minimum: -1, maximum: MAX_STOCK, description: '-1 means unlimited', examples: [-1] }),
  taxable: Type.Boolean(),
  createdAt: Type.Integer({ description: 'Unix ms', examples: [1767225600000] }),
  updatedAt: Type.Integer({ description: 'Unix ms', examples: [1767225600000] }),
});

const UpsertBody = Type.Object({
  sku: Type.String({
    minLength: 1,
    maxLength: 64,
    // No surrounding spaces and no control characters (assertSku in src/domain/inventory.ts).
    pattern: '^\\S([\\s\\S]*\\S)?$',
    description: 'Unique per merchant; an existing sku is updated. No surrounding spaces or control characters',
  }),
  name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: 'Trimmed' }),
  priceUsd: Usd({ description: 'Unit price in USD, at most two decimals' }),
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
}, { examples: [{ sku: 'espresso', name: 'Espresso', priceUsd: 3, stockQty: -1, taxable: true }] });

const Saved = (description: string) => Type.Object({ ok: Type.Literal(true), item: InventoryItem }, { description });

export function inventoryRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;

  app.get(
    '/api/inventory',
    {
      config: { auth: 'key', scope: 'inventory:read' },
      schema: {
        tags: ['inventory'],
        summary: "List the merchant's inventory, by sku",
        security,
        response: {
          200: Type.Object(
            { items: Type.Array(InventoryItem), ...Degraded },
            { description: 'The items, by sku; empty with degraded: true while the database is unreachable' },
          ),
          ...keyErrors(),
        },
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
      config: { auth: 'key', scope: 'inventory:write' },
      schema: {
        tags: ['inventory'],
        summary: 'Create an inventory item, or update the one with the same sku',
        description: '201 when the sku is new, 200 when an existing item was updated (its id stays).',
        security,
        body: UpsertBody,
        response: { 200: Saved('An existing item was updated (its id stays)'), 201: Saved('A new item was created'), ...keyErrors(400) },
      },
    },
    async (request, reply) => {
      const { created, item } = await upsertInventoryItem(db, merchantOf(request), request.body, Date.now(), writeOf(request));
      return reply.status(created ? 201 : 200).send({ ok: true, item });
    },
  );
}
