/**
 * The admin operations (those the session cookie opens, `auth: 'session'`) come from the routes
 * the app registered (./routes.ts); what registration cannot say is kept here: the URL to call
 * each one with, path parameters filled in. Bodies are the document's request examples. The admin
 * security matrix is generated from both and fails for a registered admin operation without a URL
 * here.
 */
import { credentialOf, type RegisteredRoute } from './routes.ts';

export interface AdminRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** As the OpenAPI document writes it. */
  path: string;
  /** The role the route declares beyond a session; undefined: any signed-in wallet. */
  role: string | undefined;
  url: string;
  /** The body for a call by `wallet`: the document's request example, when the operation takes a JSON body. */
  body: (wallet: string) => unknown;
}

/** A URL, or a URL and how the example body names the caller. */
type Call = string | { url: string; /** The example's `wallet` becomes the caller's: the operation acts only on the caller's own. */ ownWallet: true };

const WALLET = '0x90f79bf6eb2c4f870365e785982e1f101e93b906';
const NO_SUCH_ID = 'matrix-unknown';

/** The URL to call each admin operation with, by `METHOD path`. */
export const ADMIN_URLS: Record<string, Call> = {
  'POST /api/split/deploy': '/api/split/deploy',
  'POST /api/shop/config': '/api/shop/config',
  'GET /api/auth/me': '/api/auth/me',
  'POST /api/auth/logout': '/api/auth/logout',
  'POST /api/receipts/refund': { url: '/api/receipts/refund', ownWallet: true },
  'GET /api/receipts/{id}/refunds': `/api/receipts/${NO_SUCH_ID}/refunds`,
  'POST /api/receipts/terminal': '/api/receipts/terminal',
  'GET /api/admin/subscriptions': '/api/admin/subscriptions',
  'POST /api/admin/subscriptions': '/api/admin/subscriptions',
  'POST /api/admin/subscriptions/{id}/rotate': `/api/admin/subscriptions/${NO_SUCH_ID}/rotate`,
  'DELETE /api/admin/subscriptions/{id}': `/api/admin/subscriptions/${NO_SUCH_ID}`,
  'GET /api/admin/roles': '/api/admin/roles',
  'POST /api/admin/roles': '/api/admin/roles',
  'DELETE /api/admin/roles/{wallet}/{role}': `/api/admin/roles/${WALLET}/admin`,
  'POST /api/admin/users': '/api/admin/users',
  'GET /api/users/me': '/api/users/me',
  'PUT /api/users/me': '/api/users/me',
  'POST /api/users/heartbeat': '/api/users/heartbeat',
  'GET /api/admin/webhooks': '/api/admin/webhooks',
  'POST /api/admin/webhooks': '/api/admin/webhooks',
  'DELETE /api/admin/webhooks/{id}': `/api/admin/webhooks/${NO_SUCH_ID}`,
  'POST /api/admin/webhooks/{id}/test': `/api/admin/webhooks/${NO_SUCH_ID}/test`,
  'GET /api/admin/webhooks/deliveries': '/api/admin/webhooks/deliveries',
  'POST /api/admin/webhooks/deliveries/{id}/redeliver': `/api/admin/webhooks/deliveries/${NO_SUCH_ID}/redeliver`,
  'GET /api/admin/platform': '/api/admin/platform',
  'GET /api/admin/receipts/{id}/sweep': `/api/admin/receipts/${NO_SUCH_ID}/sweep`,
  'GET /api/admin/sweeps/status': '/api/admin/sweeps/status',
  'GET /api/admin/split/balances': '/api/admin/split/balances',
  'GET /api/admin/split/payouts': '/api/admin/split/payouts',
  'PUT /api/admin/split/payouts': '/api/admin/split/payouts',
  'DELETE /api/admin/split/payouts': '/api/admin/split/payouts',
  'GET /api/admin/split/versions': '/api/admin/split/versions',
  'POST /api/admin/split/versions': '/api/admin/split/versions',
  'GET /api/admin/rejected-writes': '/api/admin/rejected-writes',
  'GET /api/admin/apk': '/api/admin/apk',
  'GET /api/admin/apk/{app}': '/api/admin/apk/matrix',
  'PUT /api/admin/apk/{app}': '/api/admin/apk/matrix',
};

/** The registered routes the session cookie opens. */
export function adminOperations(routes: RegisteredRoute[]): RegisteredRoute[] {
  return routes.filter((r) => credentialOf(r) === 'session');
}

type Json = Record<string, any>;

/** Each registered admin operation that has a URL here, with its role and the document's request example. */
export function adminRoutes(routes: RegisteredRoute[], doc: Json): AdminRoute[] {
  return adminOperations(routes).flatMap((r) => {
    const call = ADMIN_URLS[`${r.method} ${r.path}`];
    if (call === undefined) return [];
    const example: unknown = doc.paths?.[r.path]?.[r.method.toLowerCase()]?.requestBody?.content?.['application/json']?.example;
    const own = typeof call !== 'string' && call.ownWallet;
    const body = (wallet: string) => (own ? { ...(example as Json), wallet } : example);
    return [{ method: r.method as AdminRoute['method'], path: r.path, role: r.role, url: typeof call === 'string' ? call : call.url, body }];
  });
}
