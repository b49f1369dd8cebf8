/**
 * Standard Webhooks signatures: HMAC-SHA256 over `${id}.${timestamp}.${body}` with the secret's
 * base64 bytes (after the `whsec_` prefix), sent as `webhook-signature: v1,<base64>`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

function secretBytes(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

export function signWebhook(secret: string, id: string, timestampSec: number, body: string): string {
  const mac = createHmac('sha256', secretBytes(secret)).update(`${id}.${timestampSec}.${body}`).digest('base64');
  return `v1,${mac}`;
}

export function webhookHeaders(secret: string, id: string, timestampSec: number, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': signWebhook(secret, id, timestampSec, body),
  };
}

/**
 * What a receiver does: checks one of the space-separated signatures and that the timestamp is
 * within `toleranceSec` of now. Exported for tests and for merchants' reference.
 */
export function verifyWebhook(
  secret: string,
  headers: { id: string; timestamp: string; signature: string },
  body: string,
  nowSec = Math.floor(Date.now() / 1000),
  toleranceSec = 300,
): boolean {
  const ts = Number(headers.timestamp);
  if (!Number.isInteger(ts) || Math.abs(nowSec - ts) > toleranceSec) return false;
  const expected = Buffer.from(signWebhook(secret, headers.id, ts, body).slice(3), 'base64');
  return headers.signature.split(' ').some((part) => {
    if (!part.startsWith('v1,')) return false;
    const got = Buffer.from(part.slice(3), 'base64');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
