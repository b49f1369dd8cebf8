/** Scopes and products are the subscriptions contract's (src/contract/subscriptions.ts). */
import { SCOPES, type Scope } from '../contract/subscriptions.ts';

export { DEFAULT_PRODUCT, PRODUCTS, SCOPES, type Product, type ProductName, type Scope } from '../contract/subscriptions.ts';

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/**
 * Scopes only a superadmin grants: the user directory (users:read) is not a merchant's data, so
 * neither a key a merchant issues itself nor a signed-in wallet's session carries it.
 */
export const GRANTED_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['users:read']);
