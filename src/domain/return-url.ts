/**
 * A receipt's returnUrl: where the payment page's "Back to shop" link leads once the receipt is
 * paid, failed or expired (DESIGN.md "Integrator API"). The page only ever shows it as a link,
 * never redirects to it, and only:
 * - an absolute https URL, or http on localhost / 127.0.0.1 / [::1] while the dev chain runs
 *   (the rule webhooks follow for loopback: src/webhooks/ssrf.ts webhookTargetPolicy);
 * - whose origin the shop allows: one of its allowedEmbedOrigins (the shop settings, POST
 *   /api/shop/config), checked when the receipt is created and again whenever the page shows it,
 *   so an origin the shop removes stops being linked to at once.
 * docs/decisions.md "returnUrl" says why the shop's embed origins are the list.
 */
import { InvalidInput } from '../lib/errors.ts';

export const MAX_RETURN_URL_LENGTH = 2048;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export interface ReturnUrlPolicy {
  /** http on a loopback host is accepted: on the dev chain, never in production. */
  allowLoopbackHttp: boolean;
}

/** The policy of a configuration: the dev chain's, as webhookTargetPolicy decides it for webhooks. */
export function returnUrlPolicy(config: { chain: string; nodeEnv: string }): ReturnUrlPolicy {
  return { allowLoopbackHttp: config.chain === 'dev' && config.nodeEnv !== 'production' };
}

function parsed(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

/**
 * Checks a returnUrl as a create sent it (absent: none) and returns it as stored, normalised as
 * browsers write it (new URL(...).href). Refuses anything that is not an absolute https URL (http
 * on a loopback host under `policy`), and URLs carrying credentials.
 */
export function parseReturnUrl(value: unknown, policy: ReturnUrlPolicy): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length > MAX_RETURN_URL_LENGTH) {
    throw new InvalidInput(`returnUrl must be an absolute https URL of at most ${MAX_RETURN_URL_LENGTH} characters`);
  }
  const url = parsed(value);
  if (url === null) throw new InvalidInput('returnUrl must be an absolute https URL, such as https://shop.example/orders/1001');
  const loopback = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !(loopback && policy.allowLoopbackHttp)) {
    throw new InvalidInput(
      policy.allowLoopbackHttp
        ? `returnUrl must use https (or http on localhost, allowed on the dev chain); ${url.protocol.replace(/:$/, '')} is refused`
        : `returnUrl must use https; ${url.protocol.replace(/:$/, '')} is refused`,
    );
  }
  if (url.username !== '' || url.password !== '') throw new InvalidInput('returnUrl must not carry a user name or password');
  return url.href;
}

/** The origin of a stored returnUrl. */
export function originOf(returnUrl: string): string {
  return new URL(returnUrl).origin;
}

/** Refuses a returnUrl whose origin is not among the shop's allowed origins. */
export function assertReturnOriginAllowed(returnUrl: string, allowedOrigins: readonly string[]): void {
  const origin = originOf(returnUrl);
  if (allowedOrigins.includes(origin)) return;
  throw new InvalidInput(
    `returnUrl's origin ${origin} is not one the shop allows: add it to allowedEmbedOrigins in the shop settings ` +
      `(admin app, Shop; POST /api/shop/config)${allowedOrigins.length === 0 ? ', which lists none yet' : ` (now ${allowedOrigins.join(', ')})`}`,
  );
}

/**
 * The returnUrl the payment page may link to: the stored one while its origin is still allowed
 * and it is still an http(s) URL, else null.
 */
export function returnUrlShown(returnUrl: string | null, allowedOrigins: readonly string[]): string | null {
  if (returnUrl === null) return null;
  const url = parsed(returnUrl);
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:')) return null;
  return allowedOrigins.includes(url.origin) ? url.href : null;
}
