import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { clearSessionCookie, sessionOf, setSessionCookie } from '../../auth/plugin.ts';
import { SESSION_TTL_MS } from '../../auth/sessions.ts';
import { errorRef } from '../schemas.ts';
import type { App } from './index.ts';

const Session = Type.Object({
  wallet: Type.String(),
  roles: Type.Array(Type.String()),
  csrfToken: Type.String({ description: 'Send as x-csrf-token on every state-changing request' }),
});

const adminErrors = { 400: errorRef, 401: errorRef, 403: errorRef, 429: errorRef };
/** The OpenAPI security requirement of the routes that need the session cookie. */
const sessionSecurity = [{ sessionCookie: [] }];

export function authRoutes(app: App, deps: Deps): void {
  const { auth, config } = deps;
  const secure = config.siteUrl.startsWith('https:');

  app.post(
    '/api/auth/challenge',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['admin session'],
        summary: 'Start a wallet sign-in: an EIP-712 payload to sign',
        description: 'Sign `typedData` with eth_signTypedData_v4, then call /api/auth/login. The nonce is single-use and expires after 5 minutes.',
        body: Type.Object({ wallet: Type.String() }),
        response: {
          200: Type.Object({
            nonce: Type.String(),
            expiresAt: Type.Integer(),
            typedData: Type.Object({
              domain: Type.Unknown(),
              types: Type.Unknown(),
              primaryType: Type.String(),
              message: Type.Unknown(),
            }),
          }),
          ...adminErrors,
        },
      },
    },
    async (request) => auth.challenge(request.body.wallet),
  );

  app.post(
    '/api/auth/login',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['admin session'],
        summary: 'Finish sign-in with the signature; sets the cb_auth_token cookie',
        body: Type.Object({ wallet: Type.String(), nonce: Type.String(), signature: Type.String() }),
        response: { 200: Type.Object({ ok: Type.Boolean(), ...Session.properties }), ...adminErrors },
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
      schema: { tags: ['admin session'], summary: 'The signed-in wallet', security: sessionSecurity, response: { 200: Session, ...adminErrors } },
    },
    async (request) => {
      const s = sessionOf(request);
      return { wallet: s.wallet, roles: s.roles, csrfToken: s.csrfToken };
    },
  );

  app.post(
    '/api/auth/logout',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin session'],
        summary: 'End the session on the server',
        security: sessionSecurity,
        response: { 200: Type.Object({ ok: Type.Boolean() }), ...adminErrors },
      },
    },
    async (request, reply) => {
      await auth.logout(sessionOf(request).sessionId);
      clearSessionCookie(reply, secure || request.protocol === 'https');
      return { ok: true };
    },
  );
}
