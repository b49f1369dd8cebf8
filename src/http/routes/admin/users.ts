/** User import (superadmin). */
import type { Deps } from '../../../deps.ts';
import { adminErrors, cookieAuth } from '../../../contract/common.ts';
import { IMPORT_MAX_USERS, ImportUsersBody, UsersImported } from '../../../contract/users.ts';
import type { App } from '../../app-type.ts';

export function adminUserRoutes(app: App, deps: Deps): void {
  app.post(
    '/api/admin/users',
    {
      config: { auth: 'session', role: 'superadmin' },
      bodyLimit: 8 * 1024 * 1024,
      schema: {
        tags: ['admin'],
        summary: 'Import users (upsert by wallet)',
        description: `An array of at most ${IMPORT_MAX_USERS} user records; each record replaces the stored one whole.`,
        security: cookieAuth,
        body: ImportUsersBody,
        response: {
          200: UsersImported,
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const { upserted } = await deps.users.upsert(request.body);
      return { ok: true, upserted };
    },
  );
}
