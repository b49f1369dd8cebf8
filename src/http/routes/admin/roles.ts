/** Role grants: a superadmin grants and withdraws `admin`. Superadmins come from configuration. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { adminErrors, cookieAuth, HandlerCheckedWallet, stringEnum, Wallet } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

export function adminRoleRoutes(app: App, deps: Deps): void {
  const { auth, config } = deps;
  const Grant = Type.Object({
    wallet: Wallet,
    role: stringEnum(['admin']),
    grantedBy: Wallet,
    grantedAt: Type.Integer({ description: 'Unix ms', examples: [1767225600000] }),
  });

  app.get(
    '/api/admin/roles',
    {
      config: { auth: 'session', role: 'superadmin' },
      schema: {
        tags: ['admin'],
        summary: 'Granted roles and the configured superadmins',
        security: cookieAuth,
        response: {
          200: Type.Object(
            { grants: Type.Array(Grant), superadmins: Type.Array(Wallet, { description: 'SUPERADMIN_WALLETS' }) },
            { description: 'The admin grants and the configured superadmins' },
          ),
          ...adminErrors,
        },
      },
    },
    async () => ({ grants: await auth.listAdmins(), superadmins: config.superadminWallets }),
  );

  app.post(
    '/api/admin/roles',
    {
      config: { auth: 'session', role: 'superadmin' },
      schema: {
        tags: ['admin'],
        summary: 'Grant the admin role',
        security: cookieAuth,
        body: Type.Object(
          { wallet: HandlerCheckedWallet({ description: 'The wallet granted the role (else 400 invalid_wallet)' }), role: Type.Literal('admin') },
          { examples: [{ wallet: '0x90f79bf6eb2c4f870365e785982e1f101e93b906', role: 'admin' }] },
        ),
        errorCodes: { 400: ['invalid_wallet'] },
        response: { 200: Type.Object({ ok: Type.Literal(true) }, { description: 'Granted' }), ...adminErrors },
      },
    },
    async (request) => {
      await auth.grantAdmin(sessionOf(request), request.body.wallet);
      return { ok: true };
    },
  );

  app.delete(
    '/api/admin/roles/:wallet/:role',
    {
      config: { auth: 'session', role: 'superadmin' },
      schema: {
        tags: ['admin'],
        summary: 'Withdraw the admin role',
        security: cookieAuth,
        params: Type.Object({
          wallet: HandlerCheckedWallet({ description: 'The wallet losing the role (else 400 invalid_wallet)' }),
          role: Type.Literal('admin'),
        }),
        errorCodes: { 400: ['invalid_wallet'] },
        response: { 200: Type.Object({ ok: Type.Literal(true) }, { description: 'Withdrawn' }), ...adminErrors },
      },
    },
    async (request) => {
      await auth.revokeAdmin(sessionOf(request), request.params.wallet);
      return { ok: true };
    },
  );
}
