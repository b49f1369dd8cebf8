/**
 * Every developer route of the specification with the scope it requires, and a call that
 * succeeds for a merchant holding receipt RECEIPT_ID and inventory item SKU with a split
 * configured. The security matrix and the OpenAPI test both read this table.
 */
import { randomBytes } from 'node:crypto';
import type { Scope } from '../../src/gateway/scopes.ts';

export type Method = 'GET' | 'POST';

export interface Route {
  method: Method;
  /** As the specification and the OpenAPI document write it. */
  path: string;
  /** The scope the specification requires; undefined: any valid key, no scope. */
  scope: Scope | undefined;
  /** The URL to call, for the matrix merchant. */
  url: string;
  /** A valid body for the matrix merchant (fresh per call). */
  body?: () => unknown;
}

export const RECEIPT_ID = 'matrix-receipt';
export const SKU = 'matrix-sku';
const uniq = () => randomBytes(6).toString('hex');

/** Every developer route with its scope, from the specification's scope table. */
export const DEVELOPER_ROUTES: Route[] = [
  { method: 'GET', path: '/api/receipts', scope: 'receipts:read', url: '/api/receipts' },
  {
    method: 'POST',
    path: '/api/receipts',
    scope: 'receipts:write',
    url: '/api/receipts',
    body: () => ({ id: `m-${uniq()}`, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 }),
  },
  { method: 'GET', path: '/api/receipts/{id}', scope: 'receipts:read', url: `/api/receipts/${RECEIPT_ID}` },
  { method: 'GET', path: '/api/receipts/status', scope: 'receipts:read', url: `/api/receipts/status?receiptId=${RECEIPT_ID}` },
  { method: 'GET', path: '/api/split/deploy', scope: 'split:read', url: '/api/split/deploy' },
  { method: 'GET', path: '/api/split/transactions', scope: 'split:read', url: '/api/split/transactions' },
  { method: 'POST', path: '/api/split/withdraw', scope: undefined, url: '/api/split/withdraw', body: () => ({}) },
  { method: 'GET', path: '/api/users/search', scope: 'users:read', url: '/api/users/search?q=a' },
  { method: 'GET', path: '/api/users/live', scope: 'users:read', url: '/api/users/live' },
  { method: 'GET', path: '/api/inventory', scope: 'inventory:read', url: '/api/inventory' },
  {
    method: 'POST',
    path: '/api/inventory',
    scope: 'inventory:write',
    url: '/api/inventory',
    body: () => ({ sku: `sku-${uniq()}`, name: 'Mug', priceUsd: 12.5, stockQty: 10, taxable: true }),
  },
  { method: 'POST', path: '/api/orders', scope: 'orders:create', url: '/api/orders', body: () => ({ items: [{ sku: SKU, qty: 1 }] }) },
  { method: 'GET', path: '/api/shop/config', scope: 'shop:read', url: '/api/shop/config' },
  { method: 'GET', path: '/api/site/container', scope: undefined, url: '/api/site/container' },
];

