/** User import (superadmin), the signed-in wallet's own profile and its presence heartbeat. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { getProfile, heartbeat, updateProfile } from '../../../domain/profile.ts';
import { upsertUsers } from '../../../domain/users.ts';
import { adminErrors, cookieAuth } from './merchant.ts';
import type { App } from '../index.ts';

const Profile = Type.Object({
  wallet: Type.String(),
  displayName: Type.String(),
  pfpUrl: Type.Union([Type.String(), Type.Null()]),
  xp: Type.Number(),
  live: Type.Boolean({ description: 'The presence rule: live, spacePublic and a heartbeat within 2 minutes' }),
  spacePublic: Type.Boolean(),
  spaceUrl: Type.Union([Type.String(), Type.Null()]),
  platform: Type.Union([Type.String(), Type.Null()]),
  liveSince: Type.Union([Type.Integer(), Type.Null()]),
  lastSeen: Type.Union([Type.Integer(), Type.Null()]),
  lastHeartbeat: Type.Union([Type.Integer(), Type.Null()]),
  domains: Type.Array(Type.String()),
  platforms: Type.Array(Type.String()),
  languages: Type.Array(Type.String()),
});

export const IMPORT_MAX_USERS = 5000;

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
        body: Type.Array(Type.Unknown(), { maxItems: IMPORT_MAX_USERS }),
        response: { 200: Type.Object({ ok: Type.Boolean(), upserted: Type.Integer() }), ...adminErrors },
      },
    },
    async (request) => {
      const { upserted } = await upsertUsers(db, request.body, Date.now());
      return { ok: true, upserted };
    },
  );

  app.get(
    '/api/users/me',
    {
      config: { auth: 'session' },
      schema: { tags: ['admin'], summary: 'My profile', security: cookieAuth, response: { 200: Profile, ...adminErrors } },
    },
    async (request) => getProfile(db, sessionOf(request).wallet),
  );

  app.put(
    '/api/users/me',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Update my profile',
        security: cookieAuth,
        body: Type.Object(
          {
            displayName: Type.Optional(Type.String({ maxLength: 100 })),
            pfpUrl: Type.Optional(Type.Union([Type.String(), Type.Null()])),
            spacePublic: Type.Optional(Type.Boolean()),
            spaceUrl: Type.Optional(Type.Union([Type.String(), Type.Null()])),
            domains: Type.Optional(Type.Array(Type.String())),
            platforms: Type.Optional(Type.Array(Type.String())),
            languages: Type.Optional(Type.Array(Type.String())),
            platform: Type.Optional(Type.Union([Type.String(), Type.Null()])),
          },
          { additionalProperties: false },
        ),
        response: { 200: Profile, ...adminErrors },
      },
    },
    async (request) => updateProfile(db, sessionOf(request).wallet, request.body as Record<string, unknown>),
  );

  app.post(
    '/api/users/heartbeat',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Presence heartbeat (send at least every 2 minutes while live)',
        security: cookieAuth,
        body: Type.Object({
          live: Type.Optional(Type.Boolean()),
          spaceUrl: Type.Optional(Type.String()),
          platform: Type.Optional(Type.String()),
        }),
        response: { 200: Profile, ...adminErrors },
      },
    },
    async (request) => heartbeat(db, sessionOf(request).wallet, request.body),
  );
}
