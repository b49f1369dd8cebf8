/**
 * Subscription keys from the admin app. A merchant manages its own wallet's subscriptions; a
 * superadmin manages any, and alone may set a custom rate limit. Keys are shown only when issued.
 */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import type { SessionInfo } from '../../../auth/sessions.ts';
import { Forbidden, InvalidInput, NotFound } from '../../../domain/errors.ts';
import { isAddress, normalizeWallet } from '../../../domain/wallet.ts';
import {
  createSubscription,
  getSubscription,
  listSubscriptions,
  revokeSubscription,
  rotateKey,
} from '../../../gateway/subscriptions.ts';
import { adminErrors, answerEnum, cookieAuth, HANDLER_CHECKS, handlerCheckedEnum, HandlerCheckedWallet, ProductSchema, ScopeSchema, Wallet } from '../../schemas.ts';
import { DEFAULT_PRODUCT, PRODUCTS, SCOPES } from '../../../gateway/scopes.ts';
import type { App } from '../../app-type.ts';

const KeySlot = answerEnum(['primary', 'secondary']);

const Subscription = Type.Object({
  id: Type.String({ examples: ['sub_9Xk2mQ7vLp'] }),
  wallet: Wallet,
  name: Type.String({ examples: ['Checkout'] }),
  product: ProductSchema,
  scopes: Type.Array(ScopeSchema),
  rateLimitPerMinute: Type.Integer({ minimum: 1, examples: [600] }),
  status: answerEnum(['active', 'revoked']),
  createdAt: Type.Integer({ description: 'Unix ms' }),
  revokedAt: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms; null while active' }),
  keys: Type.Array(
    Type.Object({ slot: KeySlot, prefix: Type.String({ description: 'The first characters of the key, to recognise it' }), createdAt: Type.Integer() }),
  ),
});

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
        querystring: Type.Object({ wallet: Type.Optional(HandlerCheckedWallet({ description: 'Superadmin: another wallet (else 400 invalid_wallet)' })) }),
        errorCodes: { 400: ['invalid_wallet'] },
        response: { 200: Type.Object({ subscriptions: Type.Array(Subscription) }, { description: 'The subscriptions; keys are never shown again' }), ...adminErrors },
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
        body: Type.Object(
          {
            wallet: Type.Optional(HandlerCheckedWallet({ description: 'The merchant; the signed-in wallet by default. Another: superadmin only' })),
            product: Type.Optional(handlerCheckedEnum(Object.keys(PRODUCTS), { description: `The product; ${DEFAULT_PRODUCT} by default` })),
            scopes: Type.Optional(
              Type.Array(handlerCheckedEnum(SCOPES), { maxItems: 20, description: "A subset of the product's scopes; all of them by default" }),
            ),
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
            rateLimitPerMinute: Type.Optional(
              Type.Integer({ description: "Superadmin only; the product's limit by default", [HANDLER_CHECKS]: { minimum: 1, maximum: 1_000_000 } }),
            ),
          },
          { examples: [{ product: 'checkout', name: 'Web shop' }] },
        ),
        errorCodes: { 400: ['invalid_wallet'] },
        response: {
          201: Type.Object(
            {
              ...Subscription.properties,
              primaryKey: Type.String({ description: 'Shown only now', examples: ['spl_Zq7mW2xK9vT4bN8cR1yL5sD3fG6hJ0pQ'] }),
              secondaryKey: Type.String({ description: 'Shown only now', examples: ['spl_Lm3nB8vC2xZ7qW1eR5tY9uI4oP6aS0dF'] }),
            },
            { description: 'Created, with both keys: store them now, they are never shown again' },
          ),
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
        params: Type.Object({ id: Type.String({ description: 'The subscription id' }) }),
        body: Type.Object({ key: Type.Union([Type.Literal('primary'), Type.Literal('secondary')]) }, { examples: [{ key: 'secondary' }] }),
        response: {
          200: Type.Object(
            { id: Type.String(), slot: KeySlot, key: Type.String({ description: 'The new key, shown only now' }) },
            { description: 'The new key; the old one in this slot stops working' },
          ),
          ...adminErrors,
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
        params: Type.Object({ id: Type.String({ description: 'The subscription id' }) }),
        response: {
          200: Type.Object({ ok: Type.Literal(true), id: Type.String(), status: answerEnum(['revoked']) }, { description: 'Revoked, with both keys' }),
          ...adminErrors,
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
