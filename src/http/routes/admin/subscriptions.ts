/**
 * Subscription keys from the admin app. A merchant manages its own wallet's subscriptions; a
 * superadmin manages any, and alone may set a custom rate limit. Keys are shown only when issued.
 */
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { adminErrors, errorRef, cookieAuth } from '../../../contract/common.ts';
import {
  CreateSubscriptionBody,
  KeyRotated,
  ListSubscriptionsQuery,
  RotateKeyBody,
  SubscriptionCreated,
  SubscriptionList,
  SubscriptionParams,
  SubscriptionRevoked,
} from '../../../contract/subscriptions.ts';
import type { App } from '../../app-type.ts';

export function adminSubscriptionRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/admin/subscriptions',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'List subscriptions (keys are never shown again)',
        security: cookieAuth,
        querystring: ListSubscriptionsQuery,
        errorCodes: { 400: ['invalid_wallet'] },
        response: { 200: SubscriptionList, ...adminErrors },
      },
    },
    async (request) => deps.subscriptions.list({ by: sessionOf(request), wallet: request.query.wallet }),
  );

  app.post(
    '/api/admin/subscriptions',
    {
      config: { auth: 'session', idempotency: 'secret' },
      schema: {
        tags: ['admin'],
        summary: 'Create a subscription; answers both keys, shown only this once',
        security: cookieAuth,
        body: CreateSubscriptionBody,
        errorCodes: { 400: ['invalid_wallet'] },
        response: {
          201: SubscriptionCreated,
          ...adminErrors,
        },
      },
    },
    async (request, reply) => reply.status(201).send(await deps.subscriptions.create({ by: sessionOf(request), input: request.body })),
  );

  app.post(
    '/api/admin/subscriptions/:id/rotate',
    {
      config: { auth: 'session', idempotency: 'secret' },
      schema: {
        tags: ['admin'],
        summary: 'Regenerate one key; the other keeps working',
        security: cookieAuth,
        params: SubscriptionParams,
        body: RotateKeyBody,
        response: {
          200: KeyRotated,
          ...adminErrors, 404: errorRef,
        },
      },
    },
    async (request) => deps.subscriptions.rotate({ by: sessionOf(request), id: request.params.id, slot: request.body.key }),
  );

  app.delete(
    '/api/admin/subscriptions/:id',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Revoke a subscription and both its keys',
        security: cookieAuth,
        params: SubscriptionParams,
        response: {
          200: SubscriptionRevoked,
          ...adminErrors, 404: errorRef,
        },
      },
    },
    async (request) => deps.subscriptions.revoke({ by: sessionOf(request), id: request.params.id }),
  );
}
