import type { Deps } from '../../deps.ts';
import { clearSessionCookie, sessionOf, setSessionCookie } from '../../auth/plugin.ts';
import { SESSION_TTL_MS } from '../../auth/sessions.ts';
import { cookieAuth, errorRef } from '../../contract/common.ts';
import { Challenge, ChallengeBody, LoginBody, SessionAnswer, SignedIn, SignedOut } from '../../contract/auth.ts';
import type { App } from '../app-type.ts';

const adminErrors = { 400: errorRef, 401: errorRef, 403: errorRef, 429: errorRef };

export function authRoutes(app: App, deps: Deps): void {
  const { auth, config } = deps;
  const secure = config.siteUrl.startsWith('https:');

  app.post(
    '/api/auth/challenge',
    {
      config: { auth: 'public', idempotency: 'none' },
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
    async (request) => auth.challenge(request.body.wallet),
  );

  app.post(
    '/api/auth/login',
    {
      config: { auth: 'public', idempotency: 'none' },
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
      const { token, session } = await auth.login(request.body);
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
