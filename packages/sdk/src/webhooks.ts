/**
 * Verifies a webhook delivery as Standard Webhooks defines it (webhook-id, webhook-timestamp and
 * webhook-signature over the raw body, with the endpoint's `whsec_` secret, within 5 minutes), with
 * the standardwebhooks package itself, and returns the event it carries.
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { operations } from './openapi.ts';

/** An event, as a webhook delivers it and GET /api/events lists it. */
export type Event = operations['getEvent']['responses'][200]['content']['application/json'];

/** Headers as a Fetch `Headers`, Node's `req.headers`, or a plain object. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export { WebhookVerificationError };

const NAMES = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function pick(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of NAMES) {
    let value: string | string[] | null | undefined;
    if (headers instanceof Headers) value = headers.get(name);
    else value = Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
    if (Array.isArray(value)) value = value.join(' ');
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

function isEvent(value: unknown): value is Event {
  const v = value as Partial<Record<keyof Event, unknown>> | null;
  return typeof v === 'object' && v !== null && typeof v.id === 'string' && typeof v.type === 'string' && typeof v.data === 'object';
}

/**
 * The event of a delivery whose signature is good; throws WebhookVerificationError otherwise (a
 * wrong secret, a changed body, a header missing, a timestamp older than 5 minutes).
 * `payload` must be the body exactly as received: parse it after, never before.
 */
export function verify(payload: string | Buffer, headers: WebhookHeaders, secret: string): Event {
  const event = new Webhook(secret).verify(payload, pick(headers));
  if (!isEvent(event)) throw new WebhookVerificationError('The signed payload is not a Splitline event');
  // The body is signed, but its id must also be the one the headers name: a receiver dedupes on it.
  if (event.id !== pick(headers)['webhook-id']) throw new WebhookVerificationError('The event id differs from webhook-id');
  return event;
}
