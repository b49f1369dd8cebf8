/**
 * Role grants: a superadmin grants and withdraws `admin` (a platform role) and `merchant` (the
 * platform pays for the wallet's split deployment). Superadmins come from configuration.
 */
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
    async () => ({ grants: await auth.listGrants(), superadmins: config.superadminWallets }),
  );

  app.post(
    '/api/admin/roles',
    {
      config: { auth: 'session', role: 'superadmin' },
      schema: {
        tags: ['admin'],
        summary: 'Grant a role',
        description: 'admin: a platform role. merchant: the platform pays for the wallet\'s split deployment (POST /api/split/deploy without splitAddress).',
        security: cookieAuth,
        body: GrantRoleBody,
        errorCodes: { 400: ['invalid_wallet'] },
        response: { 200: Ok('Granted'), ...adminErrors },
      },
    },
    async (request) => {
      await auth.grantRole(sessionOf(request), request.body.wallet, request.body.role);
      return { ok: true };
    },
  );

  app.delete(
    '/api/admin/roles/:wallet/:role',
    {
      config: { auth: 'session', role: 'superadmin' },
      schema: {
        tags: ['admin'],
        summary: 'Withdraw a role',
        security: cookieAuth,
        params: RevokeRoleParams,
        errorCodes: { 400: ['invalid_wallet'] },
        response: { 200: Ok('Withdrawn'), ...adminErrors },
      },
    },
    async (request) => {
      await auth.revokeRole(sessionOf(request), request.params.wallet, request.params.role);
      return { ok: true };
    },
  );
}
