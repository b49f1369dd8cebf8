/**
 * The developer operations (those a subscription key opens) come from the routes the app
 * registered, with the scope each declares (./routes.ts); what registration cannot say is kept
 * here: how to call each one so that it succeeds for a merchant holding receipt RECEIPT_ID and
 * inventory item SKU with a split configured, and event EVENT_ID. The security matrix generates its cases from both
 * and fails for a registered developer operation with no call here. The OpenAPI and fuzz tests
 * read DEVELOPER_ROUTES.
 */
import { randomBytes } from 'node:crypto';
import type { Scope } from '../../src/gateway/scopes.ts';
import { credentialOf, lastRegisteredRoutes, type RegisteredRoute } from './routes.ts';

export type Method = 'GET' | 'POST';

export interface Route {
  method: Method;
  /** As the OpenAPI document writes it. */
  path: string;
  /** The scope the route declares; undefined: any valid key, no scope. */
  scope: Scope | undefined;
  /** The URL to call, for the matrix merchant. */
  url: string;
  /** A valid body for the matrix merchant (fresh per call). */
  body?: () => unknown;
  readsChain?: true;
}

export interface Call {
  url: string;
  body?: () => unknown;
  /** The route reads the chain: an app without one (the matrix's) answers it 503 chain_unavailable once auth let it through. */
  readsChain?: true;
}

export const RECEIPT_ID = 'matrix-receipt';
export const SKU = 'matrix-sku';
/** An event the matrix merchant's set-up stores (events come from changes the matrix does not make). */
export const EVENT_ID = 'msg_matrixEvent0001';
const uniq = () => randomBytes(6).toString('hex');

/** How to call each developer operation, by `METHOD path`. */
export const DEVELOPER_CALLS: Record<string, Call> = {
  'GET /api/receipts': { url: '/api/receipts' },
  'POST /api/receipts': {
    url: '/api/receipts',
    body: () => ({ id: `m-${uniq()}`, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 }),
  },
  'GET /api/receipts/{id}': { url: `/api/receipts/${RECEIPT_ID}` },
  'GET /api/receipts/status': { url: `/api/receipts/status?receiptId=${RECEIPT_ID}` },
  'GET /api/split/deploy': { url: '/api/split/deploy' },
  'GET /api/split/transactions': { url: '/api/split/transactions' },
  'GET /api/split/balances': { url: '/api/split/balances', readsChain: true },
  'GET /api/split/settlements': { url: '/api/split/settlements' },
  'POST /api/split/withdraw': { url: '/api/split/withdraw', body: () => ({}) },
  'GET /api/users/search': { url: '/api/users/search?q=a' },
  'GET /api/users/live': { url: '/api/users/live' },
  'GET /api/inventory': { url: '/api/inventory' },
  'POST /api/inventory': {
    url: '/api/inventory',
    body: () => ({ sku: `sku-${uniq()}`, name: 'Mug', priceUsd: 12.5, stockQty: 10, taxable: true }),
  },
  'POST /api/orders': { url: '/api/orders', body: () => ({ items: [{ sku: SKU, qty: 1 }] }) },
  'GET /api/shop/config': { url: '/api/shop/config' },
  'GET /api/site/container': { url: '/api/site/container' },
  'GET /api/events': { url: '/api/events' },
  'GET /api/events/{id}': { url: `/api/events/${EVENT_ID}` },
};

/** The registered routes a subscription key opens. */
export function developerOperations(routes: RegisteredRoute[]): RegisteredRoute[] {
  return routes.filter((r) => credentialOf(r) === 'key');
}

/** Each registered developer operation that has a call here, with its registered scope. */
export function developerRoutes(routes: RegisteredRoute[]): Route[] {
  return developerOperations(routes).flatMap((r) => {
    const call = DEVELOPER_CALLS[`${r.method} ${r.path}`];
    return call === undefined ? [] : [{ method: r.method as Method, path: r.path, scope: r.scope, ...call }];
  });
}

/**
 * The calls as a list for tests that enumerate it while loading, before they hold an app; `scope`
 * is read from the routes of the app built last in the process, so only inside a test.
 */
export const DEVELOPER_ROUTES: Route[] = Object.entries(DEVELOPER_CALLS).map(([operation, call]) => {
  const [method, path] = operation.split(' ') as [Method, string];
  return {
    method,
    path,
    ...call,
    get scope(): Scope | undefined {
      const route = lastRegisteredRoutes().find((r) => r.method === method && r.path === path);
      if (route === undefined) throw new Error(`${operation} is not a registered route`);
      return route.scope;
    },
  };
});
