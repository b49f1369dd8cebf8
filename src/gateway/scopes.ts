export const SCOPES = [
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

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** A product bundles scopes with a rate limit; a subscription is issued for one product. */
export interface Product {
  name: string;
  description: string;
  scopes: readonly Scope[];
  rateLimitPerMinute: number;
}

export const PRODUCTS: Record<string, Product> = {
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
};
export const DEFAULT_PRODUCT = 'full';
