/** User import (superadmin), the signed-in wallet's own profile and its presence heartbeat. */
import { Type, type TSchema } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { getProfile, heartbeat, updateProfile } from '../../../domain/profile.ts';
import { upsertUsers } from '../../../domain/users.ts';
import { adminErrors, cookieAuth } from './merchant.ts';
import { Wallet } from '../../schemas.ts';
import type { App } from '../index.ts';

const Profile = Type.Object({
  wallet: Wallet,
  displayName: Type.String({ examples: ['Ada'] }),
  pfpUrl: Type.Union([Type.String(), Type.Null()]),
  xp: Type.Number({ minimum: 0, examples: [1200] }),
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

  app.get(
    '/api/users/me',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'My profile',
        security: cookieAuth,
        response: { 200: Type.Object(Profile.properties, { description: 'The profile (defaults until it is first saved)' }), ...adminErrors },
      },
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
          { additionalProperties: false, examples: [{ displayName: 'Ada', spacePublic: true, languages: ['en'] }] },
        ),
        response: { 200: Type.Object(Profile.properties, { description: 'The profile as stored' }), ...adminErrors },
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
        body: Type.Object(
          {
            live: Type.Optional(Type.Boolean({ description: 'false ends the live session; true by default' })),
            spaceUrl: Type.Optional(Type.String({ description: 'An http(s) URL' })),
            platform: Type.Optional(Type.String()),
          },
          { examples: [{ live: true, spaceUrl: 'https://space.example/ada', platform: 'web' }] },
        ),
        response: { 200: Type.Object(Profile.properties, { description: 'The profile after the heartbeat' }), ...adminErrors },
      },
    },
    async (request) => heartbeat(db, sessionOf(request).wallet, request.body),
  );
}
