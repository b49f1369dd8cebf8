/** Webhook endpoint registration for the signed-in merchant. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { createEndpoint, deleteEndpoint, listEndpoints, WEBHOOK_EVENTS } from '../../../webhooks/endpoints.ts';
import { listDeliveries, redeliver } from '../../../webhooks/outbox.ts';
import { adminErrors, cookieAuth } from './merchant.ts';
import type { App } from '../index.ts';

const Endpoint = Type.Object({ id: Type.String(), url: Type.String(), events: Type.Array(Type.String()), createdAt: Type.Integer() });

export function adminWebhookRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;
  const policy = { allowPrivate: deps.config.webhookAllowPrivate };

  app.get(
    '/api/admin/webhooks',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'My webhook endpoints',
        security: cookieAuth,
        response: { 200: Type.Object({ webhooks: Type.Array(Endpoint) }), ...adminErrors },
      },
    },
    async (request) => ({ webhooks: await listEndpoints(db, sessionOf(request).wallet) }),
  );

  app.post(
    '/api/admin/webhooks',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Register a webhook endpoint; answers its signing secret once',
        description: `Events: ${WEBHOOK_EVENTS.join(', ')} (all by default). Private and loopback targets are refused.`,
        security: cookieAuth,
        body: Type.Object({ url: Type.String(), events: Type.Optional(Type.Array(Type.String())) }),
        response: { 201: Type.Object({ ...Endpoint.properties, secret: Type.String() }), ...adminErrors },
      },
    },
    async (request, reply) => reply.status(201).send(await createEndpoint(db, sessionOf(request).wallet, request.body, policy)),
  );

  app.delete(
    '/api/admin/webhooks/:id',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Remove a webhook endpoint',
        security: cookieAuth,
        params: Type.Object({ id: Type.String() }),
        response: { 200: Type.Object({ ok: Type.Boolean() }), ...adminErrors },
      },
    },
    async (request) => {
      await deleteEndpoint(db, sessionOf(request).wallet, request.params.id);
      return { ok: true };
    },
  );

  const Delivery = Type.Object({
    id: Type.String(),
    eventId: Type.String(),
    endpointId: Type.String(),
    type: Type.String(),
    status: Type.String(),
    attempts: Type.Integer(),
    nextAttemptAt: Type.Integer(),
    lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
    lastError: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.Integer(),
    deliveredAt: Type.Union([Type.Integer(), Type.Null()]),
    log: Type.Array(
      Type.Object({
        at: Type.Integer(),
        statusCode: Type.Union([Type.Integer(), Type.Null()]),
        error: Type.Union([Type.String(), Type.Null()]),
        durationMs: Type.Integer(),
      }),
    ),
  });

  app.get(
    '/api/admin/webhooks/deliveries',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Recent webhook deliveries with every attempt',
        security: cookieAuth,
        response: { 200: Type.Object({ deliveries: Type.Array(Delivery) }), ...adminErrors },
      },
    },
    async (request) => ({ deliveries: await listDeliveries(db, sessionOf(request).wallet) }),
  );

  app.post(
    '/api/admin/webhooks/deliveries/:id/redeliver',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Send a delivery again now',
        security: cookieAuth,
        params: Type.Object({ id: Type.String() }),
        response: { 200: Type.Object({ ok: Type.Boolean() }), ...adminErrors },
      },
    },
    async (request) => {
      await redeliver(db, sessionOf(request).wallet, request.params.id);
      return { ok: true };
    },
  );
}
