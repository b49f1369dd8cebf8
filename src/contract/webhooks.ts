/** Webhook endpoints and their deliveries, from the admin app: /api/admin/webhooks. */
import { Type, type Static } from '@sinclair/typebox';
import { answerEnum, HANDLER_CHECKS, handlerCheckedEnum } from './common.ts';

/** The events an endpoint can subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  'receipt.payment_received',
  'receipt.completed',
  'receipt.tx_mismatch',
  'receipt.expired',
  'receipt.payment_reversed',
  'receipt.refund_recorded',
  'receipt.refund_verified',
  'receipt.refund_unverified',
  'receipt.refunded',
  'write.rejected',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * Sent to one endpoint on the merchant's request ("Send test event"), whatever it subscribes to;
 * not subscribable, and tried once: its result is shown, not retried.
 */
export const TEST_EVENT_TYPE = 'webhook.test';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const WebhookEvent = answerEnum(WEBHOOK_EVENT_TYPES);
/** What a delivery can carry: the subscribable events and the test event. */
export const DeliveredEvent = answerEnum([...WEBHOOK_EVENT_TYPES, TEST_EVENT_TYPE]);

export const Endpoint = Type.Object({
  id: Type.String({ examples: ['wh_4Kq8sD2xLm'] }),
  url: Type.String({ examples: ['https://shop.example/hooks/splitline'] }),
  events: Type.Array(WebhookEvent, { examples: [['receipt.completed', 'receipt.refunded']] }),
  createdAt: Type.Integer({ description: 'Unix ms' }),
});
export type Endpoint = Static<typeof Endpoint>;

/** Which targets this service accepts, so the admin app can say so. */
export const Targets = Type.Object(
  {
    loopback: Type.Boolean({ description: 'http(s)://localhost and 127.0.0.1 accepted: only on the dev chain (CHAIN=dev), never in production' }),
    private: Type.Boolean({ description: 'Private network ranges accepted (WEBHOOK_ALLOW_PRIVATE, for tests)' }),
  },
  { description: 'Targets other than public https URLs that this service accepts' },
);
export type Targets = Static<typeof Targets>;

export const EndpointList = Type.Object({ webhooks: Type.Array(Endpoint), targets: Targets }, { description: 'The endpoints, and the targets accepted' });
export type EndpointList = Static<typeof EndpointList>;

export const CreateEndpointBody = Type.Object(
  {
    url: Type.String({ description: 'A public https URL (http and loopback only on the dev chain)' }),
    events: Type.Optional(
      Type.Array(handlerCheckedEnum(WEBHOOK_EVENT_TYPES), { description: 'The events to send; all of them when omitted', [HANDLER_CHECKS]: { minItems: 1 } }),
    ),
  },
  // A loopback target, which a fresh `npm start` (the dev chain) accepts; elsewhere a public https URL.
  { examples: [{ url: 'http://localhost:3000/hooks/splitline', events: ['receipt.completed', 'receipt.refunded'] }] },
);
export type CreateEndpointBody = Static<typeof CreateEndpointBody>;

export const EndpointCreated = Type.Object(
  {
    ...Endpoint.properties,
    secret: Type.String({ description: 'The Standard Webhooks signing secret, shown only now', examples: ['whsec_8s2Kd91LxQv3TnP0aZr7YbWc'] }),
  },
  { description: 'Registered; keep the secret to verify signatures' },
);
export type EndpointCreated = Static<typeof EndpointCreated>;

export const IdParams = (description: string, example: string) => Type.Object({ id: Type.String({ description, examples: [example] }) });

export const TestQueued = Type.Object(
  { deliveryId: Type.String({ description: 'The delivery in GET /api/admin/webhooks/deliveries' }) },
  { description: 'Queued; it is tried once' },
);
export type TestQueued = Static<typeof TestQueued>;

const nullableString = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const Attempt = Type.Object({
  at: Type.Integer(),
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  error: nullableString('Why no answer came, raw: "CODE: message" (Node\'s error code, or TIMEOUT, PRIVATE_ADDRESS)'),
  errorCode: nullableString('The code alone, such as ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT or TIMEOUT'),
  errorText: nullableString('The same in plain words'),
  durationMs: Type.Integer(),
});
export type Attempt = Static<typeof Attempt>;

export const Delivery = Type.Object({
  id: Type.String(),
  eventId: Type.String(),
  endpointId: Type.String(),
  type: DeliveredEvent,
  status: answerEnum(DELIVERY_STATUSES, { description: 'pending, delivered or failed (retries exhausted; a test event is tried once)' }),
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
export type Delivery = Static<typeof Delivery>;

export const DeliveryList = Type.Object({ deliveries: Type.Array(Delivery) }, { description: 'Recent deliveries, newest first' });
export type DeliveryList = Static<typeof DeliveryList>;
