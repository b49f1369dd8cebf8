/** Webhook endpoint registration for the signed-in merchant. */
import type { Deps } from '../../../deps.ts';
import { sessionOf } from '../../../auth/plugin.ts';
import { writeOf } from '../../idempotency.ts';
import { adminErrors, cookieAuth, errorRef, Ok } from '../../../contract/common.ts';
import {
  CreateEndpointBody,
  DeliveryList,
  EndpointCreated,
  EndpointList,
  IdParams,
  TEST_EVENT_TYPE,
  TestQueued,
  WEBHOOK_EVENT_TYPES,
} from '../../../contract/webhooks.ts';
import type { App } from '../../app-type.ts';

export function adminWebhookRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/admin/webhooks',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'My webhook endpoints, and which targets this service accepts',
        security: cookieAuth,
        response: { 200: EndpointList, ...adminErrors },
      },
    },
    async (request) => deps.webhookEndpoints.list({ wallet: sessionOf(request).wallet }),
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
          `Events: ${WEBHOOK_EVENT_TYPES.join(', ')} (all by default). Private and loopback targets are refused, ` +
          'except loopback (http://localhost, http://127.0.0.1) while the service runs on the dev chain.',
        security: cookieAuth,
        body: CreateEndpointBody,
        response: {
          201: EndpointCreated,
          ...adminErrors,
        },
      },
    },
    async (request, reply) => reply.status(201).send(await deps.webhookEndpoints.create({ wallet: sessionOf(request).wallet, input: request.body })),
  );

  app.delete(
    '/api/admin/webhooks/:id',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Remove a webhook endpoint',
        security: cookieAuth,
        params: IdParams('The endpoint id', 'wh_Xw3kQ9vL2pR7sT1a'),
        response: { 200: Ok('Removed'), ...adminErrors, 404: errorRef },
      },
    },
    async (request) => deps.webhookEndpoints.remove({ wallet: sessionOf(request).wallet, id: request.params.id }),
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
        params: IdParams('The endpoint id', 'wh_Xw3kQ9vL2pR7sT1a'),
        response: {
          202: TestQueued,
          409: errorRef,
          ...adminErrors, 404: errorRef,
        },
      },
    },
    async (request, reply) => {
      const queued = await deps.webhookEndpoints.sendTest({ wallet: sessionOf(request).wallet, endpointId: request.params.id, writeId: writeOf(request).id });
      return reply.status(202).send(queued);
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
        response: { 200: DeliveryList, ...adminErrors },
      },
    },
    async (request) => deps.webhookEndpoints.deliveries({ wallet: sessionOf(request).wallet }),
  );

  app.post(
    '/api/admin/webhooks/deliveries/:id/redeliver',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['admin'],
        summary: 'Send a delivery again now',
        security: cookieAuth,
        params: IdParams('The delivery id', 'dlv_Xw3kQ9vL2pR7sT1a'),
        response: { 200: Ok('Queued to be sent again now'), ...adminErrors, 404: errorRef },
      },
    },
    async (request) => deps.webhookEndpoints.redeliver({ wallet: sessionOf(request).wallet, deliveryId: request.params.id }),
  );
}
