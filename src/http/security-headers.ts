/**
 * Security headers on every response: one onSend hook for everything the router answers, and the
 * same set as raw header lines for the few answers written before routing (src/http/limits.ts).
 *
 * A header a route (or its handler) already set is kept: the admin app (src/http/web.ts) and the
 * payment page (src/http/pay-page.ts) bring their own CSP from their scopes' hooks, which run after
 * this one. Under /pay/ this hook sets no framing header at all (no X-Frame-Options, no CSP
 * frame-ancestors, no resource policy): the page may be framed by the origins its shop allows, and
 * its route alone knows them.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** JSON, files and anything else that is not a page: nothing may load, run or frame it. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'";

/**
 * HTML without a CSP of its own, which today is the API reference at /docs (swagger-ui): its own
 * scripts and styles, the inline style attributes its React components write, data: icons, and
 * fetches of the OpenAPI document and of "try it out" calls, which go to the document's server
 * (SITE_URL, which may be another origin than the one serving the page).
 */
export function pageCsp(siteUrl: string): string {
  const site = new URL(siteUrl).origin;
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self' ${site}`,
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** A year; sent only when SITE_URL is https. Subdomains are the operator's to decide. */
export const HSTS = 'max-age=31536000';

/** Headers every response carries, whatever its path or type. */
export function baseHeaders(https: boolean): Record<string, string> {
  return {
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    ...(https ? { 'strict-transport-security': HSTS } : {}),
  };
}

/** The full set for a JSON answer outside /pay/ (also used for the raw answers before routing). */
export function jsonHeaders(https: boolean): Record<string, string> {
  return {
    ...baseHeaders(https),
    'x-frame-options': 'DENY',
    'content-security-policy': API_CSP,
    'cross-origin-resource-policy': 'same-origin',
  };
}

/** The payment page and its assets: framing is the page route's decision. */
export function isPayPagePath(path: string): boolean {
  return path === '/pay' || path.startsWith('/pay/');
}

export function registerSecurityHeaders(app: FastifyInstance, opts: { siteUrl: string }): void {
  const https = new URL(opts.siteUrl).protocol === 'https:';
  const policy = { https, pageCsp: pageCsp(opts.siteUrl), base: Object.entries(baseHeaders(https)) };
  app.addHook('onSend', (request, reply, payload, done) => {
    applySecurityHeaders(request, reply, policy);
    done(null, payload);
  });
}

function applySecurityHeaders(request: FastifyRequest, reply: FastifyReply, policy: { https: boolean; pageCsp: string; base: [string, string][] }): void {
  const setIfAbsent = (name: string, value: string) => {
    if (!reply.hasHeader(name)) reply.header(name, value);
  };
  for (const [name, value] of policy.base) setIfAbsent(name, value);
  // request.url is already stripped of PUBLIC_BASE_PATH.
  const path = request.url.split('?')[0] ?? '';
  // API answers are one caller's data (a session's CSRF token, a merchant's receipts): no cache,
  // shared or the browser's, keeps them. A route with a policy of its own keeps it (the APK
  // download: private, revalidated by its ETag).
  if (path.startsWith('/api/')) setIfAbsent('cache-control', 'no-store');
  if (isPayPagePath(path)) return;
  setIfAbsent('x-frame-options', 'DENY');
  setIfAbsent('content-security-policy', /^text\/html\b/i.test(String(reply.getHeader('content-type') ?? '')) ? policy.pageCsp : API_CSP);
  // Same-origin pages and server-side clients are unaffected; CORS reads (the dev chain's RPC, CORS_ORIGINS) are
  // governed by CORS, not by this policy, which only stops other sites embedding the bytes (<img>, <script>).
  setIfAbsent('cross-origin-resource-policy', 'same-origin');
}
