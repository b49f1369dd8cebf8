/**
 * The built-in gateway. For every request: a correlation id on the response, client-sent
 * identity headers stripped, and the edge secret enforced when one is configured. For routes
 * that declare `config.scope` (or `config.auth: 'key'`): the subscription key resolved to a
 * merchant, the scope checked, and the subscription's rate limit applied.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { prependOnRequest } from '../lib/route-hooks.ts';
import { Forbidden, RateLimited, Unauthorized } from '../lib/errors.ts';
import { Budgets, setRateHeaders } from './budgets.ts';
import type { KeyResolver } from './key-resolver.ts';
import { looksLikeKey, safeEqual } from './keys.ts';
import type { RateDecision, RateLimiter } from './rate-limit.ts';
import type { Principal } from './subscriptions.ts';
import { GRANTED_SCOPES, type Scope } from './scopes.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a subscription key needs for this route. */
    scope?: Scope;
    /** 'key': a valid subscription key (with `scope`, one holding it); 'public': per-address rate
     *  limit, no credential; 'session': the admin session cookie (src/auth/plugin.ts); 'open': no
     *  credential and no budget (the dev chain). Every route states one. */
    auth?: 'key' | 'public' | 'session' | 'open';
    /** With auth 'public': 'route' (the default) gives each client address a budget for this
     *  route alone; 'handler' leaves it to the handler, which knows what the request names (the
     *  receipt of a payment URL, the wallet signing in) and whether it held (src/gateway/budgets.ts). */
    budget?: 'route' | 'handler';
  }
  interface FastifyRequest {
    principal: Principal | null;
    /** The request carried the configured EDGE_SECRET (never true without one). */
    edgeVerified: boolean;
  }
}

export const KEY_HEADER = 'ocp-apim-subscription-key';
const STRIPPED_HEADERS = ['x-wallet', 'wallet', 'x-subscription-id'];
/** Budget of one signed-in wallet using the admin app. */
export const SESSION_RATE_LIMIT_PER_MINUTE = 600;
const CORRELATION = /^[A-Za-z0-9._:-]{8,128}$/;

export function correlationId(header: unknown): string {
  return typeof header === 'string' && CORRELATION.test(header) ? header : randomUUID();
}

export interface GatewayOptions {
  keys: KeyResolver;
  limiter: RateLimiter;
  edgeSecret: string | undefined;
  publicRateLimitPerMinute: number;
  /** Invalid subscription keys per client address and minute (INVALID_KEY_RATE_LIMIT_PER_MINUTE). */
  invalidKeyRateLimitPerMinute: number;
  /**
   * Called instead of key authentication when a request to a key route carries no key but does
   * carry the admin session cookie: the admin app reads and writes the signed-in merchant's own
   * data through the same routes. It must enforce the session's CSRF and Origin rules.
   */
  sessionFallback?: (request: FastifyRequest) => Promise<void>;
  sessionCookie?: string;
}

export { setRateHeaders };

export function registerGateway(app: FastifyInstance, opts: GatewayOptions): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('edgeVerified', false);
  const budgets = new Budgets(opts.limiter, opts);

  // Every request: its correlation id, no client-sent identity, the edge secret.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-correlation-id', request.id);
    for (const h of STRIPPED_HEADERS) delete request.headers[h];
    if (opts.edgeSecret !== undefined) {
      const presented = request.headers['x-edge-secret'];
      request.edgeVerified = typeof presented === 'string' && safeEqual(presented, opts.edgeSecret);
      // /healthz answers load balancers without it, with {status} alone (src/http/routes/health.ts).
      if (!request.edgeVerified && request.routeOptions.url !== '/healthz') {
        done(new Forbidden('Requests must come through the edge proxy'));
        return;
      }
    }
    delete request.headers['x-edge-secret'];
    done();
  });

  // The routes that take a key, or a per-address budget: their own hook, run before the route's.
  app.addHook('onRoute', (route) => {
    const config = route.config ?? {};
    if (config.auth === 'public') {
      if (config.budget === 'handler') return;
      // Each public route its own budget per address: junk on one (payment URLs) never refuses
      // another (sign-in).
      const methods = Array.isArray(route.method) ? route.method.join(',') : route.method;
      const name = `${methods} ${route.url}`;
      prependOnRequest(route, async (request, reply) => budgets.spend(request, reply, name));
    } else if (config.scope !== undefined || config.auth === 'key') {
      const scope = config.scope;
      prependOnRequest(route, async (request, reply) => authenticate(request, reply, opts, budgets, scope));
    }
  });
}

async function authenticate(
  request: FastifyRequest,
  reply: FastifyReply,
  opts: GatewayOptions,
  budgets: Budgets,
  scope: Scope | undefined,
): Promise<void> {
  const key = request.headers[KEY_HEADER];
  if (typeof key !== 'string' || key === '') {
    if (opts.sessionFallback !== undefined && opts.sessionCookie !== undefined && request.cookies?.[opts.sessionCookie]) {
      await opts.sessionFallback(request);
      const wallet = request.session?.wallet;
      if (wallet === undefined) throw new Unauthorized();
      // A wallet signs in for free: a session carries no scope a superadmin must grant, unless
      // it is a superadmin's.
      if (scope !== undefined && GRANTED_SCOPES.has(scope) && request.session?.roles.includes('superadmin') !== true) {
        throw new Forbidden(`${scope} is granted to subscriptions by a superadmin; a session does not carry it`);
      }
      applyDecision(reply, await opts.limiter.hit(`wallet:${wallet}`, SESSION_RATE_LIMIT_PER_MINUTE));
      return;
    }
    throw new Unauthorized('Missing Ocp-Apim-Subscription-Key header');
  }
  // Every key is looked up: a valid key is never refused because of other callers' failures,
  // which are counted per (address, kind of failure) once the key is known not to hold.
  const principal = await opts.keys.resolve(key);
  if (principal === null) {
    await budgets.failed(request, looksLikeKey(key) ? 'key-unknown' : 'key-malformed');
    throw new Unauthorized('Invalid or revoked subscription key');
  }
  // The key is a credential: it must not reach handlers or logs past this point.
  delete request.headers[KEY_HEADER];
  const decision = await opts.limiter.hit(`sub:${principal.subscriptionId}`, principal.rateLimitPerMinute);
  applyDecision(reply, decision);
  if (scope !== undefined && !principal.scopes.has(scope)) {
    throw new Forbidden(`This subscription lacks the ${scope} scope`);
  }
  request.principal = principal;
}

function applyDecision(reply: FastifyReply, decision: RateDecision): void {
  setRateHeaders(reply, decision);
  if (!decision.allowed) throw new RateLimited(decision.resetAt);
}

/**
 * The merchant wallet of an authenticated request: from the subscription key, or from the admin
 * session on routes the admin app shares. Only the gateway and the session hook set these.
 */
export function merchantOf(request: FastifyRequest): string {
  if (request.principal !== null) return request.principal.wallet;
  if (request.session !== null) return request.session.wallet;
  throw new Unauthorized();
}
