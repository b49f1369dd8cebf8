/** /api/users/*: user search and presence with a key; the signed-in wallet's own profile and heartbeat. */
import { Type, type TSchema } from '@sinclair/typebox';
import type { Deps } from '../../deps.ts';
import { isDbDown } from '../../db/client.ts';
import {
  LIVE_LIST_CAP,
  listLiveUsers,
  PRESENCE_WINDOW_MS,
  SEARCH_LIMIT_DEFAULT,
  SEARCH_LIMIT_MAX,
  SEARCH_SCAN_DEFAULT,
  SEARCH_SCAN_MAX,
  searchUsers,
} from '../../domain/users.ts';
import { getProfile, heartbeat, updateProfile } from '../../domain/profile.ts';
import { sessionOf } from '../../auth/plugin.ts';
import { adminErrors, cookieAuth, Degraded, keyErrors, security, Wallet } from '../schemas.ts';
import type { App } from '../app-type.ts';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

const presence = `live is true, spacePublic is true and lastHeartbeat lies within the last ${PRESENCE_WINDOW_MS / 60_000} minutes`;

const User = Type.Object({
  wallet: Wallet,
  displayName: Type.String({ examples: ['Ada'] }),
  pfpUrl: Nullable(Type.String({ description: 'URL; null when the user has no picture' })),
  xp: Type.Number({ minimum: 0, examples: [1200] }),
  live: Type.Boolean({ description: `The presence rule's result: ${presence}` }),
  lastSeen: Nullable(Type.Integer({ description: 'Unix ms; null when never seen' })),
  lastHeartbeat: Nullable(Type.Integer({ description: 'Unix ms; null when no heartbeat was ever received' })),
  domains: Type.Array(Type.String()),
  platforms: Type.Array(Type.String()),
  languages: Type.Array(Type.String()),
});

const LiveUser = Type.Object({
  wallet: Wallet,
  displayName: Type.String({ examples: ['Ada'] }),
  pfpUrl: Nullable(Type.String({ description: 'URL; null when the user has no picture' })),
  spaceUrl: Nullable(Type.String({ description: 'URL; null when none was set' })),
  liveSince: Nullable(Type.Integer({ description: 'Unix ms; null when unknown' })),
  lastHeartbeat: Type.Integer({ description: 'Unix ms' }),
  languages: Type.Array(Type.String()),
  domains: Type.Array(Type.String()),
  platform: Nullable(Type.String()),
});

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

const tagList = (what: string) =>
  Type.Optional(
    Type.String({ maxLength: 1000, description: `Comma-separated ${what}; the user must have all (case-insensitive)` }),
  );

const SearchQuery = Type.Object({
  q: Type.Optional(
    Type.String({ maxLength: 200, description: 'Case-insensitive substring of the wallet or displayName', examples: ['ada'] }),
  ),
  domains: tagList('domains'),
  platforms: tagList('platforms'),
  languages: tagList('languages'),
  minXp: Type.Optional(Type.Number({ minimum: 0 })),
  maxXp: Type.Optional(Type.Number({ minimum: 0 })),
  live: Type.Optional(Type.Boolean({ description: `true: only users currently live (${presence})` })),
  limit: Type.Optional(
    Type.Number({ description: `Default ${SEARCH_LIMIT_DEFAULT}; clamped to 1..${SEARCH_LIMIT_MAX}` }),
  ),
  scan: Type.Optional(
    Type.Number({
      description: `Users scanned (highest XP first) before filtering. Default ${SEARCH_SCAN_DEFAULT}; clamped to limit..${SEARCH_SCAN_MAX}`,
    }),
  ),
});

export function userRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;

  app.get(
    '/api/users/search',
    {
      config: { auth: 'key', scope: 'users:read' },
      schema: {
        tags: ['users'],
        summary: 'Search the highest-XP users',
        description:
          'Takes the top `scan` users by XP (ties by wallet), keeps those passing every filter, and returns the ' +
          'first `limit` of them in XP order; `total` counts every scanned user that passed.',
        security,
        querystring: SearchQuery,
        response: {
          200: Type.Object(
            { users: Type.Array(User), total: Type.Integer({ minimum: 0, description: 'Scanned users that passed every filter' }), ...Degraded },
            { description: 'The matching users, highest XP first; empty with degraded: true while the database is unreachable' },
          ),
          ...keyErrors(400),
        },
      },
    },
    async (request) => {
      try {
        return await searchUsers(db, request.query, Date.now());
      } catch (err) {
        if (!isDbDown(err)) throw err;
        return { users: [], total: 0, degraded: true, reason: 'database_unavailable' };
      }
    },
  );

  app.get(
    '/api/users/live',
    {
      config: { auth: 'key', scope: 'users:read' },
      schema: {
        tags: ['users'],
        summary: 'Users live right now',
        description: `Users for whom ${presence}, freshest heartbeat first, at most ${LIVE_LIST_CAP}.`,
        security,
        response: {
          200: Type.Object(
            { live: Type.Array(LiveUser), ...Degraded },
            { description: 'Users live now, freshest heartbeat first; empty with degraded: true while the database is unreachable' },
          ),
          ...keyErrors(),
        },
      },
    },
    async () => {
      try {
        return { live: await listLiveUsers(db, Date.now()) };
      } catch (err) {
        if (!isDbDown(err)) throw err;
        return { live: [], degraded: true, reason: 'database_unavailable' };
      }
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
