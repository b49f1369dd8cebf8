/** The merchant's inventory: GET and POST /api/inventory. */
import { Type, type Static } from '@sinclair/typebox';
import { Degraded, Usd } from './common.ts';

/** The largest stock an item holds (src/domain/inventory.ts); -1 means unlimited. */
export const MAX_STOCK = 1_000_000_000;
/** The stock of an item never counted down: its stockQty is -1. */
export const UNLIMITED = -1;

export const InventoryItem = Type.Object({
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
export type InventoryItem = Static<typeof InventoryItem>;

export const InventoryList = Type.Object(
  { items: Type.Array(InventoryItem), ...Degraded },
  { description: 'The items, by sku; empty with degraded: true while the database is unreachable' },
);
export type InventoryList = Static<typeof InventoryList>;

export const UpsertInventoryBody = Type.Object({
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
export type UpsertInventoryBody = Static<typeof UpsertInventoryBody>;

export const InventorySaved = (description: string) => Type.Object({ ok: Type.Literal(true), item: InventoryItem }, { description });
export type InventorySaved = Static<ReturnType<typeof InventorySaved>>;
