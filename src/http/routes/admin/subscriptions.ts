/**
 * Subscription keys from the admin app. A merchant manages its own wallet's subscriptions; a
 * superadmin manages any, and alone may set a custom rate limit. Keys are shown only when issued.
 */
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import type { SessionInfo } from '../../../auth/sessions.ts';
import { Forbidden, InvalidInput, NotFound } from '../../../lib/errors.ts';
import { isAddress, normalizeWallet } from '../../../domain/wallet.ts';
import {
  createSubscription,
  getSubscription,
  listSubscriptions,
  revokeSubscription,
  rotateKey,
} from '../../../gateway/subscriptions.ts';
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

const isSuper = (s: SessionInfo) => s.roles.includes('superadmin');

export function adminSubscriptionRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;

  /** Loads a subscription the session may manage; another merchant's is 404, not 403. */
  async function owned(session: SessionInfo, id: string) {
    const sub = await getSubscription(db, id);
    if (sub.wallet !== session.wallet && !isSuper(session)) throw new NotFound(`Subscription ${id} not found`);
    return sub;
  }

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
    async (request) => {
      const session = sessionOf(request);
      let wallet = session.wallet;
      if (request.query.wallet !== undefined) {
        if (!isAddress(request.query.wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
        if (!isSuper(session) && normalizeWallet(request.query.wallet) !== session.wallet) {
          throw new Forbidden("Only a superadmin lists another wallet's subscriptions");
        }
        wallet = normalizeWallet(request.query.wallet);
      }
      return { subscriptions: await listSubscriptions(db, wallet) };
    },
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
    async (request, reply) => {
      const session = sessionOf(request);
      const body = request.body;
      const wallet = body.wallet === undefined ? session.wallet : body.wallet;
      if (!isAddress(wallet)) throw new InvalidInput('wallet must be a 0x-prefixed 40-hex address', 'invalid_wallet');
      if (normalizeWallet(wallet) !== session.wallet && !isSuper(session)) {
        throw new Forbidden('Only a superadmin creates subscriptions for another wallet');
      }
      if (body.rateLimitPerMinute !== undefined && !isSuper(session)) {
        throw new Forbidden('Only a superadmin sets a custom rate limit');
      }
      // Field by field: the body may carry extra properties, and none of them may reach the domain
      // (maxActive, the per-merchant cap, is not the caller's to set).
      const created = await createSubscription(db, {
        wallet,
        product: body.product,
        scopes: body.scopes,
        name: body.name,
        rateLimitPerMinute: body.rateLimitPerMinute,
        grantedBySuperadmin: isSuper(session),
      });
      return reply.status(201).send(created);
    },
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
    async (request) => {
      await owned(sessionOf(request), request.params.id);
      const rotated = await rotateKey(db, request.params.id, request.body.key);
      deps.keys.forget(rotated.revokedHashes);
      return { id: request.params.id, slot: rotated.slot, key: rotated.key };
    },
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
    async (request) => {
      await owned(sessionOf(request), request.params.id);
      const { revokedHashes } = await revokeSubscription(db, request.params.id);
      deps.keys.forget(revokedHashes);
      return { ok: true, id: request.params.id, status: 'revoked' };
    },
  );
}
