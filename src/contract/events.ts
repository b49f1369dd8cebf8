/**
 * The events API: /api/events and /api/events/{id} (DESIGN.md "Integrator API", Events). An event
 * is what a webhook delivery carries, field for field: a client that missed deliveries (its
 * endpoint was down, or it has none) reads the same objects here, newest first.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Degraded } from './common.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './webhooks.ts';

/** How long the API lists an event after it happened. */
export const EVENT_RETENTION_DAYS = 30;
export const EVENT_RETENTION_MS = EVENT_RETENTION_DAYS * 24 * 3600_000;

/** An event id, as a webhook's `webhook-id` header carries it. */
export const EVENT_ID = /^msg_[A-Za-z0-9_-]{1,64}$/;
const EVENT_ID_EXAMPLE = 'msg_Xw3kQ9vL2pR7sT1aB4cD6e';

const EventTypeSchema = Type.Unsafe<WebhookEventType>({
  type: 'string',
  enum: [...WEBHOOK_EVENT_TYPES],
  description: 'The event type, as a webhook endpoint subscribes to it',
  examples: ['receipt.completed'],
});

export const Event = Type.Object(
  {
    id: Type.String({ description: "The event id: the webhook-id header of its deliveries, the same on every retry", examples: [EVENT_ID_EXAMPLE] }),
    type: EventTypeSchema,
    createdAt: Type.Integer({ description: 'When it happened, Unix ms', examples: [1767225600000] }),
    timestamp: Type.String({ description: 'The same instant as an ISO 8601 string (the Standard Webhooks payload field)', examples: ['2026-01-01T00:00:00.000Z'] }),
    data: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'What the event reports. Receipt events: receiptId, merchant, status, exception, totalUsd, currency (the receipt\'s: the ' +
        'currency it is priced in, USD), payTo, amount, amountPaid and amountDue (token base units, decimal strings, kept for the ' +
        'consumers that read them), the same named by their unit: totalBaseUnits, amountPaidBaseUnits and amountDueBaseUnits beside ' +
        'token (its address) and decimals, then transactionHash, transactionTimestamp and the receipt\'s metadata; ' +
        'receipt.payment_reversed adds amountReversed and amountReversedBaseUnits. Refund events add the refund: usd and amountUsd, ' +
        'refundedUsd, buyer, txHash, verification; write.rejected names the write and why it could not apply',
      examples: [
        {
          receiptId: 'order-1001',
          merchant: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
          status: 'completed',
          exception: null,
          totalUsd: 7,
          currency: 'USD',
          payTo: '0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0',
          amount: '7000000',
          amountPaid: '7000000',
          amountDue: '0',
          transactionHash: '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060',
          transactionTimestamp: 1767225590000,
          metadata: { orderNumber: 'A-1001' },
          totalBaseUnits: '7000000',
          amountPaidBaseUnits: '7000000',
          amountDueBaseUnits: '0',
          token: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
          decimals: 6,
        },
      ],
    }),
  },
  { description: 'An event, exactly as the webhook delivery of it carries it (the delivery body is this object)' },
);
export type Event = Static<typeof Event>;

export const ListEventsQuery = Type.Object({
  type: Type.Optional(
    Type.Unsafe<WebhookEventType>({
      type: 'string',
      enum: [...WEBHOOK_EVENT_TYPES],
      description: `Only events of this type; anything else: 400 invalid_input`,
      examples: ['receipt.completed'],
    }),
  ),
  starting_after: Type.Optional(
    Type.String({
      pattern: EVENT_ID.source,
      description:
        "An event id, the last one of the previous page: this page continues after it in the list's order (newest first). " +
        `Not an event of this merchant from the last ${EVENT_RETENTION_DAYS} days: 400 invalid_input. The example shows the form; ` +
        'in "Try it out", put the id of an event of the previous page (or clear it for the first page)',
      examples: [EVENT_ID_EXAMPLE],
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'How many events, newest first; outside 1..100: 400 invalid_input', examples: [20] }),
  ),
});
export type ListEventsQuery = Static<typeof ListEventsQuery>;

export const EventList = Type.Object(
  {
    events: Type.Array(Event),
    has_more: Type.Boolean({
      description: 'More events match beyond this page: ask again with starting_after set to the last event id of this one',
      examples: [false],
    }),
    ...Degraded,
  },
  {
    description: `The merchant's events of the last ${EVENT_RETENTION_DAYS} days, newest first; an empty list with degraded: true while the database is unreachable`,
  },
);
export type EventList = Static<typeof EventList>;

export const EventIdParams = Type.Object({ id: Type.String({ description: 'The event id (a delivery\'s webhook-id header)', examples: [EVENT_ID_EXAMPLE] }) });
export type EventIdParams = Static<typeof EventIdParams>;
