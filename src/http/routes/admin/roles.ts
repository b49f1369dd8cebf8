/** Role grants: a superadmin grants and withdraws `admin`. Superadmins come from configuration. */
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { adminErrors, cookieAuth, Ok } from '../../../contract/common.ts';
import { GrantRoleBody, RevokeRoleParams, RoleList } from '../../../contract/roles.ts';
import type { App } from '../../app-type.ts';

export function adminRoleRoutes(app: App, deps: Deps): void {
  const { auth, config } = deps;
  app.get(
    '/api/admin/roles',
    {
      config: { auth: 'session', role: 'superadmin' },
      schema: {
        tags: ['admin'],
        summary: 'Granted roles and the configured superadmins',
        security: cookieAuth,
        response: {
          200: RoleList,
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
        body: GrantRoleBody,
        errorCodes: { 400: ['invalid_wallet'] },
        response: { 200: Ok('Granted'), ...adminErrors },
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
        params: RevokeRoleParams,
        errorCodes: { 400: ['invalid_wallet'] },
        response: { 200: Ok('Withdrawn'), ...adminErrors },
      },
    },
    async (request) => {
      await auth.revokeAdmin(sessionOf(request), request.params.wallet);
      return { ok: true };
    },
  );
}
