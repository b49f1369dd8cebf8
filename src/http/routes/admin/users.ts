/** User import (superadmin). */
import { Type, type TSchema } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { upsertUsers } from '../../../domain/users.ts';
import { adminErrors, cookieAuth, Wallet } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

export const IMPORT_MAX_USERS = 5000;

const orNull = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));
const UnixMs = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Unix ms' });
const HttpUrl = Type.String({ maxLength: 2048, description: 'An http(s) URL' });
const Tags = Type.Array(Type.String({ pattern: '\\S', description: 'At most 64 characters once trimmed' }), { maxItems: 50 });

/**
 * One imported user: the User fields of the specification plus spacePublic, spaceUrl, liveSince
 * and platform (parseUserRecord in src/domain/users.ts, which checks the rest). A field left out
 * or null takes its default (empty, false, 0).
 */
const ImportedUser = Type.Object({
  wallet: Wallet,
  displayName: orNull(Type.String({ maxLength: 100 })),
  pfpUrl: orNull(HttpUrl),
  xp: orNull(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  live: orNull(Type.Boolean()),
  spacePublic: orNull(Type.Boolean({ description: 'The presence rule needs it: only public users are listed as live' })),
  spaceUrl: orNull(HttpUrl),
  platform: orNull(Type.String({ maxLength: 64 })),
  liveSince: orNull(UnixMs),
  lastSeen: orNull(UnixMs),
  lastHeartbeat: orNull(UnixMs),
  domains: orNull(Tags),
  platforms: orNull(Tags),
  languages: orNull(Tags),
});

export function adminUserRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;

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
        body: Type.Array(ImportedUser, {
          maxItems: IMPORT_MAX_USERS,
          examples: [
            [
              {
                wallet: '0x90f79bf6eb2c4f870365e785982e1f101e93b906',
                displayName: 'Ada',
                pfpUrl: 'https://cdn.example/ada.png',
                xp: 1200,
                live: true,
                spacePublic: true,
                spaceUrl: 'https://space.example/ada',
                platform: 'web',
                liveSince: 1767225600000,
                lastSeen: 1767225600000,
                lastHeartbeat: 1767225600000,
                domains: ['defi'],
                platforms: ['web'],
                languages: ['en'],
              },
            ],
          ],
        }),
        response: {
          200: Type.Object(
            { ok: Type.Literal(true), upserted: Type.Integer({ minimum: 0, description: 'Distinct wallets written' }) },
            { description: 'Imported' },
          ),
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const { upserted } = await upsertUsers(db, request.body, Date.now());
      return { ok: true, upserted };
    },
  );
}
