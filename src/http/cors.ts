/**
 * CORS policy. The developer API is called server to server with secret subscription keys, so by
 * default no response carries CORS headers and browsers refuse cross-origin calls; preflights find
 * no route (404). The payment page and the admin app call their API from the same origin and need
 * none. The dev chain's /dev/rpc (CHAIN=dev only) answers CORS itself, for browser wallets.
 *
 * CORS_ORIGINS lists origins (an API console, a merchant's own tool) whose pages may call the
 * subscription-key routes, and only those: the admin and session routes, the sign-in and the
 * credential-free routes stay same-origin. Credentials (cookies) are never allowed cross-origin.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';

export const CORS_ALLOWED_HEADERS = 'content-type, ocp-apim-subscription-key, x-correlation-id';
export const CORS_EXPOSED_HEADERS = 'x-correlation-id, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, retry-after';
export const CORS_MAX_AGE_S = 600;

interface KeyRoute {
  method: string;
  path: RegExp;
}

/** '/api/receipts/:id' → /^\/api\/receipts\/[^/]+$/ */
function pathPattern(url: string): RegExp {
  const parts = url.split('/').map((p) => (p.startsWith(':') ? '[^/]+' : p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${parts.join('/')}$`);
}

const isKeyRoute = (config: { scope?: unknown; auth?: unknown } | undefined) =>
  config !== undefined && (config.scope !== undefined || config.auth === 'key');

export function registerCors(app: FastifyInstance, opts: { origins: readonly string[] }): void {
  if (opts.origins.length === 0) return;
  const allowed = new Set(opts.origins);
  const keyRoutes: KeyRoute[] = [];

  app.addHook('onRoute', (route: RouteOptions) => {
    if (!isKeyRoute(route.config)) return;
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      keyRoutes.push({ method, path: pathPattern(route.url) });
    }
  });

  // A preflight has no route of its own: answer it before routing's 404, for key routes only.
  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    const wanted = request.headers['access-control-request-method'];
    if (request.method !== 'OPTIONS' || typeof origin !== 'string' || typeof wanted !== 'string') return;
    const path = request.url.split('?')[0] ?? '';
    if (!allowed.has(origin) || !keyRoutes.some((r) => r.method === wanted && r.path.test(path))) return;
    return reply
      .code(204)
      .headers({
        'access-control-allow-origin': origin,
        'access-control-allow-methods': wanted,
        'access-control-allow-headers': CORS_ALLOWED_HEADERS,
        'access-control-max-age': String(CORS_MAX_AGE_S),
        vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
      })
      .send();
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (!isKeyRoute(request.routeOptions.config)) return payload;
    reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (typeof origin === 'string' && allowed.has(origin)) {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-expose-headers', CORS_EXPOSED_HEADERS);
    }
    return payload;
  });
}
