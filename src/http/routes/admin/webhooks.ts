/** Webhook endpoint registration for the signed-in merchant. */
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { createEndpoint, deleteEndpoint, listEndpoints, WEBHOOK_EVENTS } from '../../../webhooks/endpoints.ts';
import { listDeliveries, redeliver, TEST_EVENT_TYPE } from '../../../webhooks/outbox.ts';
import { webhookTargetPolicy } from '../../../webhooks/ssrf.ts';
import { enqueueTestEvent } from '../../../webhooks/test-event.ts';
import { writeOf } from '../../idempotency.ts';
import { adminErrors, answerEnum, cookieAuth, DeliveredEvent, errorRef, HANDLER_CHECKS, handlerCheckedEnum, WebhookEvent } from '../../schemas.ts';
import type { App } from '../../app-type.ts';

const Endpoint = Type.Object({
  id: Type.String({ examples: ['wh_4Kq8sD2xLm'] }),
  url: Type.String({ examples: ['https://shop.example/hooks/splitline'] }),
  events: Type.Array(WebhookEvent, { examples: [['receipt.completed', 'receipt.refunded']] }),
  createdAt: Type.Integer({ description: 'Unix ms' }),
});

/** Which targets this service accepts, so the admin app can say so. */
const Targets = Type.Object(
  {
    loopback: Type.Boolean({ description: 'http(s)://localhost and 127.0.0.1 accepted: only on the dev chain (CHAIN=dev), never in production' }),
    private: Type.Boolean({ description: 'Private network ranges accepted (WEBHOOK_ALLOW_PRIVATE, for tests)' }),
  },
  { description: 'Targets other than public https URLs that this service accepts' },
);

const nullableString = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

const Attempt = Type.Object({
  at: Type.Integer(),
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  error: nullableString('Why no answer came, raw: "CODE: message" (Node\'s error code, or TIMEOUT, PRIVATE_ADDRESS)'),
  errorCode: nullableString('The code alone, such as ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT or TIMEOUT'),
  errorText: nullableString('The same in plain words'),
  durationMs: Type.Integer(),
});

const Delivery = Type.Object({
  id: Type.String(),
  eventId: Type.String(),
  endpointId: Type.String(),
  type: DeliveredEvent,
  status: answerEnum(['pending', 'delivered', 'failed'], { description: 'pending, delivered or failed (retries exhausted; a test event is tried once)' }),
  receiptId: nullableString('The receipt the event is about (its payload data.receiptId); null for events about none'),
  attempts: Type.Integer(),
  nextAttemptAt: Type.Integer(),
  lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
  lastError: nullableString('Raw, as on an attempt'),
  lastErrorCode: nullableString('The code alone'),
  lastErrorText: nullableString('In plain words'),
  createdAt: Type.Integer(),
  deliveredAt: Type.Union([Type.Integer(), Type.Null()]),
  log: Type.Array(Attempt),
});

export function adminWebhookRoutes(app: App, deps: Deps): void {
  const db = deps.database.db;
  const policy = webhookTargetPolicy(deps.config);
  const targets = { loopback: policy.allowLoopback, private: policy.allowPrivate };

  app.get(
    '/api/admin/webhooks',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'My webhook endpoints, and which targets this service accepts',
        security: cookieAuth,
        response: { 200: Type.Object({ webhooks: Type.Array(Endpoint), targets: Targets }, { description: 'The endpoints, and the targets accepted' }), ...adminErrors },
      },
    },
    async (request) => ({ webhooks: await listEndpoints(db, sessionOf(request).wallet), targets }),
  );

  app.post(
    '/api/admin/webhooks',
    {
      // The answer holds the signing secret, shown once: a replay must not show it again.
      config: { auth: 'session', idempotency: 'secret' },
      schema: {
        tags: ['admin'],
        summary: 'Register a webhook endpoint; answers its signing secret once',
        description:
          `Events: ${WEBHOOK_EVENTS.join(', ')} (all by default). Private and loopback targets are refused, ` +
          'except loopback (http://localhost, http://127.0.0.1) while the service runs on the dev chain.',
        security: cookieAuth,
        body: Type.Object(
          {
            url: Type.String({ description: 'A public https URL (http and loopback only on the dev chain)' }),
            events: Type.Optional(
              Type.Array(handlerCheckedEnum(WEBHOOK_EVENTS), { description: 'The events to send; all of them when omitted', [HANDLER_CHECKS]: { minItems: 1 } }),
            ),
          },
          // A loopback target, which a fresh `npm start` (the dev chain) accepts; elsewhere a public https URL.
          { examples: [{ url: 'http://localhost:3000/hooks/splitline', events: ['receipt.completed', 'receipt.refunded'] }] },
        ),
        response: {
          201: Type.Object(
            {
              ...Endpoint.properties,
              secret: Type.String({ description: 'The Standard Webhooks signing secret, shown only now', examples: ['whsec_8s2Kd91LxQv3TnP0aZr7YbWc'] }),
            },
            { description: 'Registered; keep the secret to verify signatures' },
          ),
          ...adminErrors,
        },
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
        params: Type.Object({ id: Type.String({ description: 'The endpoint id' }) }),
        response: { 200: Type.Object({ ok: Type.Literal(true) }, { description: 'Removed' }), ...adminErrors },
      },
    },
    async (request) => {
      await deleteEndpoint(db, sessionOf(request).wallet, request.params.id);
      return { ok: true };
    },
  );

  app.post(
    '/api/admin/webhooks/:id/test',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Send a test event to one endpoint',
        description:
          `Queues one \`${TEST_EVENT_TYPE}\` event for this endpoint only, whatever events it subscribes to, signed like ` +
          'every delivery. It is tried once; its result appears in the deliveries list under the answered deliveryId. ' +
          '409 while an earlier test to the same endpoint is still being sent.',
        security: cookieAuth,
        params: Type.Object({ id: Type.String({ description: 'The endpoint id' }) }),
        response: {
          202: Type.Object(
            { deliveryId: Type.String({ description: 'The delivery in GET /api/admin/webhooks/deliveries' }) },
            { description: 'Queued; it is tried once' },
          ),
          409: errorRef,
          ...adminErrors,
        },
      },
    },
    async (request, reply) => {
      const { deliveryId } = await enqueueTestEvent(db, {
        wallet: sessionOf(request).wallet,
        endpointId: request.params.id,
        writeId: writeOf(request).id,
      });
      return reply.status(202).send({ deliveryId });
    },
  );

  app.get(
    '/api/admin/webhooks/deliveries',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Recent webhook deliveries with every attempt',
        description: 'Each attempt that got no answer carries its raw error, its code and the same in plain words.',
        security: cookieAuth,
        response: { 200: Type.Object({ deliveries: Type.Array(Delivery) }, { description: 'Recent deliveries, newest first' }), ...adminErrors },
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
        params: Type.Object({ id: Type.String({ description: 'The delivery id' }) }),
        response: { 200: Type.Object({ ok: Type.Literal(true) }, { description: 'Queued to be sent again now' }), ...adminErrors },
      },
    },
    async (request) => {
      await redeliver(db, sessionOf(request).wallet, request.params.id);
      return { ok: true };
    },
  );
}
