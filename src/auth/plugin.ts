/**
 * Session authentication for admin routes (`config.auth: 'session'`): the cb_auth_token cookie,
 * CSRF token and Origin check on every state-changing request, then the route's role.
 * A subscription key never opens these routes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { prependOnRequest } from '../lib/route-hooks.ts';
import { Forbidden, RateLimited, Unauthorized } from '../lib/errors.ts';
import { SESSION_RATE_LIMIT_PER_MINUTE, setRateHeaders } from '../gateway/plugin.ts';
import type { RateLimiter } from '../gateway/rate-limit.ts';
import { safeEqual } from '../gateway/keys.ts';
import { SESSION_COOKIE, type AuthService, type Role, type SessionInfo } from './sessions.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** With auth 'session': the platform role the route needs (owners need none). */
    role?: Exclude<Role, 'owner'>;
  }
  interface FastifyRequest {
    session: SessionInfo | null;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface SessionAuthOptions {
  auth: AuthService;
  siteUrl: string;
  limiter: RateLimiter;
  /** Requests per minute for one signed-in wallet. */
  perMinute?: number;
}

/** Needs @fastify/cookie registered before it. */
export function registerSessionAuth(app: FastifyInstance, opts: SessionAuthOptions): void {
  app.decorateRequest('session', null);
  const siteOrigin = new URL(opts.siteUrl).origin;

  app.addHook('onRoute', (route) => {
    const config = route.config ?? {};
    if (config.auth !== 'session') return;
    prependOnRequest(route, async (request, reply) => {
      const session = await requireSession(request, opts.auth, siteOrigin);
      const decision = await opts.limiter.hit(`wallet:${session.wallet}`, opts.perMinute ?? SESSION_RATE_LIMIT_PER_MINUTE);
      setRateHeaders(reply, decision);
      if (!decision.allowed) throw new RateLimited(decision.resetAt);
      if (config.role !== undefined && !session.roles.includes(config.role)) {
        throw new Forbidden(`This operation needs the ${config.role} role`);
      }
    });
  });
}

/**
 * The request's session, with CSRF and Origin enforced for state-changing methods.
 * Throws 401 without a valid session and 403 when the CSRF token or Origin is wrong.
 */
export async function requireSession(request: FastifyRequest, auth: AuthService, siteOrigin: string): Promise<SessionInfo> {
  if (request.session !== null) return request.session;
  const token = request.cookies[SESSION_COOKIE];
  if (token === undefined || token === '') throw new Unauthorized('Sign in first: the session cookie is missing');
  const session = await auth.authenticate(token);
  if (session === null) throw new Unauthorized('The session is invalid or has expired; sign in again');
  if (!SAFE_METHODS.has(request.method)) {
    const csrf = request.headers['x-csrf-token'];
    if (typeof csrf !== 'string' || !safeEqual(csrf, session.csrfToken)) {
      throw new Forbidden('Missing or wrong x-csrf-token header');
    }
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== siteOrigin && origin !== ownOrigin(request)) {
      throw new Forbidden(`Requests from origin ${origin} are not accepted`);
    }
  }
  request.session = session;
  return session;
}

function ownOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

export function setSessionCookie(reply: FastifyReply, token: string, secure: boolean, maxAgeMs: number): void {
  reply.setCookie(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure,
    maxAge: Math.floor(maxAgeMs / 1000),
  });
}

export function clearSessionCookie(reply: FastifyReply, secure: boolean): void {
  reply.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', path: '/', secure });
}

/** The signed-in wallet; only the session hook sets it. */
export function sessionOf(request: FastifyRequest): SessionInfo {
  if (request.session === null) throw new Unauthorized('Sign in first');
  return request.session;
}
