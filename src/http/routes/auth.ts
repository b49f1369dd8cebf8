import { Type } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { clearSessionCookie, sessionOf, setSessionCookie } from '../../auth/plugin.ts';
import { SESSION_TTL_MS } from '../../auth/sessions.ts';
import { errorRef, HANDLER_CHECKS, HandlerCheckedWallet, RoleSchema, Wallet } from '../schemas.ts';
import type { App } from '../app-type.ts';

const Session = Type.Object({
  wallet: Wallet,
  roles: Type.Array(RoleSchema, { examples: [['owner']] }),
  csrfToken: Type.String({ description: 'Send as x-csrf-token on every state-changing request' }),
});

const TypedField = Type.Object({ name: Type.String(), type: Type.String() });

/** The EIP-712 payload of src/auth/typed-data.ts, as eth_signTypedData_v4 takes it. */
const TypedData = Type.Object(
  {
    domain: Type.Object({ name: Type.String({ examples: ['Splitline'] }), version: Type.String({ examples: ['1'] }), chainId: Type.Integer({ examples: [31337] }) }),
    types: Type.Record(Type.String(), Type.Array(TypedField), {
      examples: [
        {
          EIP712Domain: [
            { name: 'name', type: 'string' },
            { name: 'version', type: 'string' },
            { name: 'chainId', type: 'uint256' },
          ],
          Login: [
            { name: 'wallet', type: 'address' },
            { name: 'nonce', type: 'string' },
            { name: 'issuedAt', type: 'string' },
            { name: 'uri', type: 'string' },
            { name: 'statement', type: 'string' },
          ],
        },
      ],
    }),
    primaryType: Type.Literal('Login'),
    message: Type.Object({
      wallet: Wallet,
      nonce: Type.String(),
      issuedAt: Type.String({ description: 'ISO 8601', examples: ['2026-01-01T00:00:00.000Z'] }),
      uri: Type.String({ description: 'SITE_URL', examples: ['http://localhost:8080'] }),
      statement: Type.String({ examples: ['Sign in to Splitline. This request costs nothing and sends no transaction.'] }),
    }),
  },
  { description: 'Sign with eth_signTypedData_v4' },
);

const adminErrors = { 400: errorRef, 401: errorRef, 403: errorRef, 429: errorRef };
/** The OpenAPI security requirement of the routes that need the session cookie. */
const sessionSecurity = [{ sessionCookie: [] }];

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
        body: Type.Object(
          { wallet: HandlerCheckedWallet({ description: 'The wallet signing in (else 400 invalid_wallet)' }) },
          { examples: [{ wallet: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc' }] },
        ),
        errorCodes: { 400: ['invalid_wallet'] },
        response: {
          200: Type.Object(
            {
              nonce: Type.String({ examples: ['9f86d081884c7d659a2feaa0c55ad015'] }),
              expiresAt: Type.Integer({ description: 'Unix ms', examples: [1767225900000] }),
              typedData: TypedData,
            },
            { description: 'The challenge: sign typedData, then call /api/auth/login' },
          ),
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
        body: Type.Object(
          {
            wallet: HandlerCheckedWallet({ description: 'The wallet of the challenge (else 400 invalid_wallet)' }),
            nonce: Type.String({ description: 'From /api/auth/challenge', [HANDLER_CHECKS]: { minLength: 1 } }),
            signature: Type.String({ description: 'The eth_signTypedData_v4 signature of typedData', [HANDLER_CHECKS]: { pattern: '^0x[0-9a-fA-F]+$' } }),
          },
          {
            examples: [
              {
                wallet: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
                nonce: '9f86d081884c7d659a2feaa0c55ad015',
                signature: '0x' + '5f'.repeat(65),
              },
            ],
          },
        ),
        errorCodes: { 400: ['invalid_wallet'] },
        response: {
          200: Type.Object({ ok: Type.Literal(true), ...Session.properties }, { description: 'Signed in: the session cookie is set' }),
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
        security: sessionSecurity,
        response: { 200: Type.Object(Session.properties, { description: 'The session: its wallet, roles and CSRF token' }), ...adminErrors },
      },
    },
    async (request) => {
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
        security: sessionSecurity,
        response: { 200: Type.Object({ ok: Type.Literal(true) }, { description: 'Signed out: the session is ended and its cookie cleared' }), ...adminErrors },
      },
    },
    async (request, reply) => {
      await auth.logout(sessionOf(request).sessionId);
      clearSessionCookie(reply, secure || request.protocol === 'https');
      return { ok: true };
    },
  );
}
