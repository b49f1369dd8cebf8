/** /api/users/*: user search and presence with a key; the signed-in wallet's own profile and heartbeat. */
import type { Deps } from '../../deps.ts';
import { sessionOf } from '../../auth/plugin.ts';
import { adminErrors, cookieAuth, keyErrors, security } from '../../contract/common.ts';
import { HeartbeatBody, LIVE_LIST_CAP, LiveUsers, PRESENCE_RULE, ProfileAnswer, SearchUsersQuery, UpdateProfileBody, UserSearchResult } from '../../contract/users.ts';
import type { App } from '../app-type.ts';

export function userRoutes(app: App, deps: Deps): void {
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
        querystring: SearchUsersQuery,
        response: {
          200: UserSearchResult,
          ...keyErrors(400),
        },
      },
    },
    async (request) => deps.users.search({ query: request.query }),
  );

  app.get(
    '/api/users/live',
    {
      config: { auth: 'key', scope: 'users:read' },
      schema: {
        tags: ['users'],
        summary: 'Users live right now',
        description: `Users for whom ${PRESENCE_RULE}, freshest heartbeat first, at most ${LIVE_LIST_CAP}.`,
        security,
        response: {
          200: LiveUsers,
          ...keyErrors(),
        },
      },
    },
    async () => deps.users.live(),
  );

  app.get(
    '/api/users/me',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'My profile',
        security: cookieAuth,
        response: { 200: ProfileAnswer('The profile (defaults until it is first saved)'), ...adminErrors },
      },
    },
    async (request) => deps.users.profile({ wallet: sessionOf(request).wallet }),
  );

  app.put(
    '/api/users/me',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Update my profile',
        security: cookieAuth,
        body: UpdateProfileBody,
        response: { 200: ProfileAnswer('The profile as stored'), ...adminErrors },
      },
    },
    async (request) => deps.users.updateProfile(sessionOf(request).wallet, request.body as Record<string, unknown>),
  );

  app.post(
    '/api/users/heartbeat',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Presence heartbeat (send at least every 2 minutes while live)',
        security: cookieAuth,
        body: HeartbeatBody,
        response: { 200: ProfileAnswer('The profile after the heartbeat'), ...adminErrors },
      },
    },
    async (request) => deps.users.heartbeat(sessionOf(request).wallet, request.body),
  );
}
