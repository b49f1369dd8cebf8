/** Scopes and products are the subscriptions contract's (src/contract/subscriptions.ts). */
import { SCOPES, type Scope } from '../contract/subscriptions.ts';

export { DEFAULT_PRODUCT, PRODUCTS, SCOPES, type Product, type ProductName, type Scope } from '../contract/subscriptions.ts';

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
