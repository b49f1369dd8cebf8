/** Role grants: a superadmin grants and withdraws `admin`. Superadmins come from configuration. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { adminErrors, cookieAuth } from './merchant.ts';
import type { App } from '../index.ts';

export function adminRoleRoutes(app: App, deps: Deps): void {
  const { auth, config } = deps;
  const Grant = Type.Object({ wallet: Type.String(), role: Type.String(), grantedBy: Type.String(), grantedAt: Type.Integer() });

  app.get(
    '/api/admin/roles',
    {
      config: { auth: 'session', role: 'superadmin' },
      schema: {
        tags: ['admin'],
        summary: 'Granted roles and the configured superadmins',
        security: cookieAuth,
        response: { 200: Type.Object({ grants: Type.Array(Grant), superadmins: Type.Array(Type.String()) }), ...adminErrors },
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
        body: Type.Object({ wallet: Type.String(), role: Type.Literal('admin') }),
        response: { 200: Type.Object({ ok: Type.Boolean() }), ...adminErrors },
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
        params: Type.Object({ wallet: Type.String(), role: Type.Literal('admin') }),
        response: { 200: Type.Object({ ok: Type.Boolean() }), ...adminErrors },
      },
    },
    async (request) => {
      await auth.revokeAdmin(sessionOf(request), request.params.wallet);
      return { ok: true };
    },
  );
}
