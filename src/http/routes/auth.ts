import type { Deps } from '../../deps.ts';
import { clearSessionCookie, sessionOf, setSessionCookie } from '../../auth/plugin.ts';
import { SESSION_TTL_MS } from '../../auth/sessions.ts';
import { cookieAuth, errorRef } from '../../contract/common.ts';
import { Challenge, ChallengeBody, LoginBody, SessionAnswer, SignedIn, SignedOut } from '../../contract/auth.ts';
import type { App } from '../app-type.ts';
import { Budgets } from '../../gateway/budgets.ts';
import { Unauthorized } from '../../lib/errors.ts';
import { isAddress, normalizeWallet } from '../../domain/wallet.ts';

/**
 * Challenges a client address may ask for, over all wallets, per minute, as a multiple of
 * PUBLIC_RATE_LIMIT_PER_MINUTE: each writes a row, so an address spraying wallets is bounded, while
 * a client behind the same proxy asking for its own wallet has its own, much smaller, bucket first.
 */
const CHALLENGES_PER_ADDRESS_FACTOR = 10;

const adminErrors = { 400: errorRef, 401: errorRef, 403: errorRef, 429: errorRef };

export function authRoutes(app: App, deps: Deps): void {
  const { auth, config } = deps;
  const secure = config.siteUrl.startsWith('https:');
  const budgets = new Budgets(deps.limiter, config);

  app.post(
    '/api/auth/challenge',
    {
      config: { auth: 'public', budget: 'handler', idempotency: 'none' },
      schema: {
        tags: ['admin session'],
        summary: 'Start a wallet sign-in: an EIP-712 payload to sign',
        description: 'Sign `typedData` with eth_signTypedData_v4, then call /api/auth/login. The nonce is single-use and expires after 5 minutes.',
        body: ChallengeBody,
        errorCodes: { 400: ['invalid_wallet'] },
        response: {
          200: Challenge,
          ...adminErrors,
        },
      },
    },
    async (request, reply) => {
      const wallet = request.body.wallet;
      if (isAddress(wallet)) {
        // Per address and wallet: another client behind the same proxy asking for other wallets
        // does not spend it; the address-wide bucket only bounds the rows a sprayer writes.
        await budgets.spend(request, reply, 'challenges', config.publicRateLimitPerMinute * CHALLENGES_PER_ADDRESS_FACTOR);
        await budgets.spend(request, reply, `challenge:${normalizeWallet(wallet)}`);
      }
      return auth.challenge(wallet);
    },
  );

  app.post(
    '/api/auth/login',
    {
      config: { auth: 'public', budget: 'handler', idempotency: 'none' },
      schema: {
        tags: ['admin session'],
        summary: 'Finish sign-in with the signature; sets the cb_auth_token cookie',
        description:
          'Consumes the challenge (single use). A wrong signature, or a nonce unknown, expired, used or issued to another ' +
          'wallet, is 401. The answer sets the cb_auth_token cookie (HttpOnly, SameSite=Lax).',
        body: LoginBody,
        errorCodes: { 400: ['invalid_wallet'] },
        response: {
          200: SignedIn,
          ...adminErrors,
        },
      },
    },
    async (request, reply) => {
      // A sign-in that does not verify spends the address's failure budget; one that does is never
      // checked against it (it needed a challenge, which has its own budget).
      const { token, session } = await auth.login(request.body).catch(async (err: unknown) => {
        if (err instanceof Unauthorized) await budgets.failed(request, 'login-failed');
        throw err;
      });
      setSessionCookie(reply, token, secure || request.protocol === 'https', SESSION_TTL_MS);
      return { ok: true, wallet: session.wallet, roles: session.roles, csrfToken: session.csrfToken };
    },
  );

  app.get(
    '/api/auth/me',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin session'],
        summary: 'The signed-in wallet',
        security: cookieAuth,
        response: { 200: SessionAnswer, ...adminErrors },
      },
    },
    (request) => {
      const s = sessionOf(request);
      return { wallet: s.wallet, roles: s.roles, csrfToken: s.csrfToken };
    },
  );

  app.post(
    '/api/auth/logout',
    {
      config: { auth: 'session', idempotency: 'none' },
      schema: {
        tags: ['admin session'],
        summary: 'End the session on the server',
        security: cookieAuth,
        response: { 200: SignedOut, ...adminErrors },
      },
    },
    async (request, reply) => {
      await auth.logout(sessionOf(request).sessionId);
      clearSessionCookie(reply, secure || request.protocol === 'https');
      return { ok: true };
    },
  );
}
