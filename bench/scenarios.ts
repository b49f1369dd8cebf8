/**
 * The benched routes and how each request varies: random existing receipts for reads, a new id
 * for every created receipt, a rotation of realistic user searches.
 */
import { KEY_HEADER } from '../src/gateway/plugin.ts';
import { field, type Scenario } from './load.ts';
import { createRng } from './rng.ts';
import { receiptId } from './seed-receipts.ts';
import type { Seeded } from './seed.ts';

export const ROUTES = {
  receiptRead: 'GET /api/receipts/{id}',
  receiptList: 'GET /api/receipts?limit=100',
  receiptCreate: 'POST /api/receipts',
  orderCreate: 'POST /api/orders',
  orderCreateContended: 'POST /api/orders (one limited sku)',
  userSearch: 'GET /api/users/search',
} as const;
export type RouteId = keyof typeof ROUTES;

export type Planned = { id: RouteId; scenario: Scenario } | { id: RouteId; skipped: string };

export const BASELINE: Scenario = {
  label: 'bare node:http (baseline)',
  expectStatus: 200,
  headers: {},
  next: () => ({ method: 'GET', path: '/' }),
  check: (body) => (field(body, 'hello') === 'world' ? undefined : 'expected {hello: "world"}'),
};

const SEARCHES = [
  '/api/users/search?q=ana',
  '/api/users/search?languages=en&domains=gaming&limit=50',
  '/api/users/search?live=true',
  '/api/users/search?minXp=500&scan=1000&limit=100',
];

export function planRoutes(seeded: Seeded): Planned[] {
  const rng = createRng(7);
  const runId = Date.now().toString(36);
  let created = 0;
  let searched = 0;
  const headers = (id: RouteId, json = false): Record<string, string> => ({
    [KEY_HEADER]: seeded.keys.get(id) ?? '',
    ...(json ? { 'content-type': 'application/json' } : {}),
  });

  const planned: Planned[] = [
    {
      id: 'receiptRead',
      scenario: {
        label: ROUTES.receiptRead,
        expectStatus: 200,
        headers: headers('receiptRead'),
        next: () => ({ method: 'GET', path: `/api/receipts/${receiptId(rng.int(seeded.receipts))}` }),
        check: (body) => (typeof field(body, 'receiptId') === 'string' ? undefined : 'expected a receipt'),
      },
    },
    {
      id: 'receiptList',
      scenario: {
        label: ROUTES.receiptList,
        expectStatus: 200,
        headers: headers('receiptList'),
        next: () => ({ method: 'GET', path: '/api/receipts?limit=100' }),
        check: (body) => {
          const list = field(body, 'receipts');
          return Array.isArray(list) && list.length === 100 ? undefined : 'expected 100 receipts';
        },
      },
    },
    {
      id: 'receiptCreate',
      scenario: {
        label: ROUTES.receiptCreate,
        expectStatus: 201,
        headers: headers('receiptCreate', true),
        // A new id every time, so each request is a real creation rather than an idempotent replay.
        next: () => ({
          method: 'POST',
          path: '/api/receipts',
          body: {
            id: `bench-${runId}-${++created}`,
            lineItems: [
              { label: 'Flat white', priceUsd: 4.5, qty: 2 },
              { label: 'Croissant', priceUsd: 3.75 },
            ],
            totalUsd: 12.75,
          },
        }),
        check: (body) => (field(body, 'status') === 'pending' ? undefined : 'expected a pending receipt'),
      },
    },
  ];

  const orders = seeded.orders;
  // Unlimited items, then every order taking the same limited sku: each of those waits on one
  // row's stock, as a popular item's orders do.
  for (const id of ['orderCreate', 'orderCreateContended'] as const) {
    if (!orders.ok) {
      planned.push({ id, skipped: orders.reason });
      continue;
    }
    const body = id === 'orderCreate' ? orders.value.body : orders.value.contendedBody;
    planned.push({
      id,
      scenario: {
        label: ROUTES[id],
        expectStatus: 200,
        headers: headers(id, true),
        next: () => ({ method: 'POST', path: '/api/orders', body }),
        check: (res) =>
          field(res, 'ok') === true && typeof field(field(res, 'receipt'), 'receiptId') === 'string' ? undefined : 'expected {ok: true, receipt}',
      },
    });
  }

  if (seeded.users.ok) {
    planned.push({
      id: 'userSearch',
      scenario: {
        label: ROUTES.userSearch,
        expectStatus: 200,
        headers: headers('userSearch'),
        next: () => ({ method: 'GET', path: SEARCHES[searched++ % SEARCHES.length]! }),
        check: (body) => (Array.isArray(field(body, 'users')) ? undefined : 'expected {users: [...]}'),
      },
    });
  } else {
    planned.push({ id: 'userSearch', skipped: seeded.users.reason });
  }
  return planned;
}
