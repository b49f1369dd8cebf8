/**
 * The built-in gateway. For every request: a correlation id on the response, client-sent
 * identity headers stripped, and the edge secret enforced when one is configured. For routes
 * that declare `config.scope` (or `config.auth: 'key'`): the subscription key resolved to a
 * merchant, the scope checked, and the subscription's rate limit applied.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { prependOnRequest } from '../http/route-hooks.ts';
import { Forbidden, RateLimited, Unauthorized } from '../domain/errors.ts';
import type { KeyResolver } from './key-resolver.ts';
import { safeEqual } from './keys.ts';
import type { RateDecision, RateLimiter } from './rate-limit.ts';
import type { Principal } from './subscriptions.ts';
import type { Scope } from './scopes.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a subscription key needs for this route. */
    scope?: Scope;
    /** 'key': a valid subscription key (with `scope`, one holding it); 'public': per-address rate
     *  limit, no credential; 'session': the admin session cookie (src/auth/plugin.ts); 'open': no
     *  credential and no budget (liveness, the dev chain). Every route states one. */
    auth?: 'key' | 'public' | 'session' | 'open';
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

export const KEY_HEADER = 'ocp-apim-subscription-key';
const STRIPPED_HEADERS = ['x-wallet', 'wallet', 'x-subscription-id'];
/** Budget of one signed-in wallet using the admin app. */
export const SESSION_RATE_LIMIT_PER_MINUTE = 600;
const CORRELATION = /^[A-Za-z0-9._:-]{8,128}$/;
const INVALID_KEYS_MESSAGE = 'Too many invalid subscription keys from this address; retry after resetAt';

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

export function setRateHeaders(reply: FastifyReply, d: RateDecision): void {
  reply.header('x-ratelimit-limit', d.limit);
  reply.header('x-ratelimit-remaining', d.remaining);
  reply.header('x-ratelimit-reset', Math.ceil(d.resetAt / 1000));
}

export function registerGateway(app: FastifyInstance, opts: GatewayOptions): void {
  app.decorateRequest('principal', null);

  // Every request: its correlation id, no client-sent identity, the edge secret.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-correlation-id', request.id);
    for (const h of STRIPPED_HEADERS) delete request.headers[h];
    if (opts.edgeSecret !== undefined && request.routeOptions.url !== '/healthz') {
      const presented = request.headers['x-edge-secret'];
      if (typeof presented !== 'string' || !safeEqual(presented, opts.edgeSecret)) {
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
      prependOnRequest(route, async (request, reply) => {
        applyDecision(reply, await opts.limiter.hit(`ip:${request.ip}`, opts.publicRateLimitPerMinute));
      });
    } else if (config.scope !== undefined || config.auth === 'key') {
      const scope = config.scope;
      prependOnRequest(route, async (request, reply) => authenticate(request, reply, opts, scope));
    }
  });
}

async function authenticate(
  request: FastifyRequest,
  reply: FastifyReply,
  opts: GatewayOptions,
  scope: Scope | undefined,
): Promise<void> {
  const key = request.headers[KEY_HEADER];
  if (typeof key !== 'string' || key === '') {
    if (opts.sessionFallback !== undefined && opts.sessionCookie !== undefined && request.cookies?.[opts.sessionCookie]) {
      await opts.sessionFallback(request);
      const wallet = request.session?.wallet;
      if (wallet === undefined) throw new Unauthorized();
      applyDecision(reply, await opts.limiter.hit(`wallet:${wallet}`, SESSION_RATE_LIMIT_PER_MINUTE));
      return;
    }
    throw new Unauthorized('Missing Ocp-Apim-Subscription-Key header');
  }
  // Invalid keys are counted per client address; once an address has spent its budget, keys it
  // presents that would need a database lookup are refused before it (a cached key still passes).
  const failures = `badkey:${request.ip}`;
  // The resolver's own clock: tests move it past the cache's TTL.
  const principal = await opts.keys.resolve(key, undefined, async () => {
    const budget = await opts.limiter.peek(failures, opts.invalidKeyRateLimitPerMinute);
    if (!budget.allowed) throw new RateLimited(budget.resetAt, INVALID_KEYS_MESSAGE);
  });
  if (principal === null) {
    const spent = await opts.limiter.hit(failures, opts.invalidKeyRateLimitPerMinute);
    if (!spent.allowed) throw new RateLimited(spent.resetAt, INVALID_KEYS_MESSAGE);
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
