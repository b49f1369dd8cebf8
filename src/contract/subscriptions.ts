/** Scopes, products and the subscriptions that hold keys: /api/admin/subscriptions. */
import { Type, type Static } from '@sinclair/typebox';
import { answerEnum, HANDLER_CHECKS, handlerCheckedEnum, HandlerCheckedWallet, Wallet } from './common.ts';

export const SCOPES = [
  'events:read',
  'inventory:read',
  'inventory:write',
  'orders:create',
  'receipts:read',
  'receipts:write',
  'shop:read',
  'split:read',
  'users:read',
] as const;
export type Scope = (typeof SCOPES)[number];

/** A product bundles scopes with a rate limit; a subscription is issued for one product. */
export interface Product {
  name: string;
  description: string;
  scopes: readonly Scope[];
  rateLimitPerMinute: number;
}

export const PRODUCT_NAMES = ['full', 'checkout', 'readonly'] as const;
export type ProductName = (typeof PRODUCT_NAMES)[number];

const PRODUCT_TABLE = {
  full: {
    name: 'full',
    description: 'Every developer scope',
    scopes: SCOPES,
    rateLimitPerMinute: 600,
  },
  checkout: {
    name: 'checkout',
    description: 'Create orders and receipts and follow their status',
    scopes: ['inventory:read', 'orders:create', 'receipts:read', 'receipts:write', 'shop:read', 'split:read'],
    rateLimitPerMinute: 300,
  },
  readonly: {
    name: 'readonly',
    description: 'Read-only access',
    scopes: ['inventory:read', 'receipts:read', 'shop:read', 'split:read', 'users:read'],
    rateLimitPerMinute: 600,
  },
} satisfies Record<ProductName, Product>;
/** By name; a name that is not a product finds nothing. */
export const PRODUCTS: Readonly<Record<string, Product>> = PRODUCT_TABLE;
export const DEFAULT_PRODUCT: ProductName = 'full';

export const KEY_SLOTS = ['primary', 'secondary'] as const;
export type KeySlot = (typeof KEY_SLOTS)[number];
export const SUBSCRIPTION_STATUSES = ['active', 'revoked'] as const;

export const ScopeSchema = answerEnum(SCOPES);
export const ProductSchema = answerEnum(PRODUCT_NAMES);
const KeySlotSchema = answerEnum(KEY_SLOTS);

export const Subscription = Type.Object({
  id: Type.String({ examples: ['sub_9Xk2mQ7vLp'] }),
  wallet: Wallet,
  name: Type.String({ examples: ['Checkout'] }),
  product: ProductSchema,
  scopes: Type.Array(ScopeSchema),
  rateLimitPerMinute: Type.Integer({ minimum: 1, examples: [600] }),
  status: answerEnum(SUBSCRIPTION_STATUSES),
  createdAt: Type.Integer({ description: 'Unix ms' }),
  revokedAt: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms; null while active' }),
  keys: Type.Array(
    Type.Object({ slot: KeySlotSchema, prefix: Type.String({ description: 'The first characters of the key, to recognise it' }), createdAt: Type.Integer() }),
  ),
});
export type Subscription = Static<typeof Subscription>;

export const ListSubscriptionsQuery = Type.Object({
  wallet: Type.Optional(HandlerCheckedWallet({ description: 'Superadmin: another wallet (else 400 invalid_wallet)' })),
});
export type ListSubscriptionsQuery = Static<typeof ListSubscriptionsQuery>;

export const SubscriptionList = Type.Object({ subscriptions: Type.Array(Subscription) }, { description: 'The subscriptions; keys are never shown again' });
export type SubscriptionList = Static<typeof SubscriptionList>;

export const CreateSubscriptionBody = Type.Object(
  {
    wallet: Type.Optional(HandlerCheckedWallet({ description: 'The merchant; the signed-in wallet by default. Another: superadmin only' })),
    product: Type.Optional(handlerCheckedEnum(PRODUCT_NAMES, { description: `The product; ${DEFAULT_PRODUCT} by default` })),
    scopes: Type.Optional(
      Type.Array(handlerCheckedEnum(SCOPES), { maxItems: 20, description: "A subset of the product's scopes; all of them by default. users:read only when a superadmin creates it (else 403); a product's users:read is left out otherwise" }),
    ),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    rateLimitPerMinute: Type.Optional(
      Type.Integer({ description: "Superadmin only; the product's limit by default", [HANDLER_CHECKS]: { minimum: 1, maximum: 1_000_000 } }),
    ),
  },
  { examples: [{ product: 'checkout', name: 'Web shop' }] },
);
export type CreateSubscriptionBody = Static<typeof CreateSubscriptionBody>;

export const SubscriptionCreated = Type.Object(
  {
    ...Subscription.properties,
    primaryKey: Type.String({ description: 'Shown only now', examples: ['spl_Zq7mW2xK9vT4bN8cR1yL5sD3fG6hJ0pQ'] }),
    secondaryKey: Type.String({ description: 'Shown only now', examples: ['spl_Lm3nB8vC2xZ7qW1eR5tY9uI4oP6aS0dF'] }),
  },
  { description: 'Created, with both keys: store them now, they are never shown again' },
);
export type SubscriptionCreated = Static<typeof SubscriptionCreated>;

export const SubscriptionParams = Type.Object({ id: Type.String({ description: 'The subscription id', examples: ['sub_Xw3kQ9vL2pR7sT1a'] }) });

export const RotateKeyBody = Type.Object({ key: Type.Union([Type.Literal('primary'), Type.Literal('secondary')]) }, { examples: [{ key: 'secondary' }] });
export type RotateKeyBody = Static<typeof RotateKeyBody>;

export const KeyRotated = Type.Object(
  { id: Type.String(), slot: KeySlotSchema, key: Type.String({ description: 'The new key, shown only now' }) },
  { description: 'The new key; the old one in this slot stops working' },
);
export type KeyRotated = Static<typeof KeyRotated>;

export const SubscriptionRevoked = Type.Object(
  { ok: Type.Literal(true), id: Type.String(), status: answerEnum(['revoked']) },
  { description: 'Revoked, with both keys' },
);
export type SubscriptionRevoked = Static<typeof SubscriptionRevoked>;
