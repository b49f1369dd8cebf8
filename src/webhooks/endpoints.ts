/** Webhook endpoints registered per merchant. Delivery lives with the chain worker. */
import { randomBytes } from 'node:crypto';
import { and, desc, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { releaseSlot, takeSlot } from '../db/counters.ts';
import { webhookEndpoints } from '../db/schema.ts';
import { InvalidInput, NotFound } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { assertPublicUrl, type UrlPolicy } from './ssrf.ts';

export { WEBHOOK_EVENT_TYPES as WEBHOOK_EVENTS } from './outbox.ts';
import { WEBHOOK_EVENT_TYPES as WEBHOOK_EVENTS } from './outbox.ts';
export const MAX_ENDPOINTS = 10;
const ENDPOINTS_COUNTER = 'webhook_endpoints';

export interface EndpointView {
  id: string;
  url: string;
  events: string[];
  createdAt: number;
}

export async function createEndpoint(
  db: Db,
  wallet: string,
  input: { url: unknown; events?: unknown },
  policy: UrlPolicy,
  now = Date.now(),
): Promise<EndpointView & { secret: string }> {
  const url = await assertPublicUrl(input.url, policy);
  let events: string[] = [...WEBHOOK_EVENTS];
  if (input.events !== undefined) {
    if (!Array.isArray(input.events) || input.events.length === 0) throw new InvalidInput('events must be a non-empty array');
    const bad = input.events.filter((e) => !(WEBHOOK_EVENTS as readonly unknown[]).includes(e));
    if (bad.length > 0) throw new InvalidInput(`Unknown events: ${bad.join(', ')}; events: ${WEBHOOK_EVENTS.join(', ')}`);
    events = [...new Set(input.events as string[])];
  }
  const id = newId('wh');
  // Standard Webhooks secrets: "whsec_" + base64 of 24 random bytes.
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  await db.transaction(async (tx) => {
    // The cap is a counter the database increments conditionally: counting the endpoints first
    // let concurrent registrations all see room (18 of 30 got through on PostgreSQL).
    if (!(await takeSlot(tx, wallet, ENDPOINTS_COUNTER, MAX_ENDPOINTS))) {
      throw new InvalidInput(`At most ${MAX_ENDPOINTS} webhook endpoints per merchant`);
    }
    await tx.insert(webhookEndpoints).values({ wallet, id, url: url.toString(), events, secret, createdAt: now });
  });
  return { id, url: url.toString(), events, secret, createdAt: now };
}

export async function listEndpoints(db: Db, wallet: string): Promise<EndpointView[]> {
  const rows = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.wallet, wallet), isNull(webhookEndpoints.disabledAt)))
    .orderBy(desc(webhookEndpoints.createdAt));
  return rows.map((r) => ({ id: r.id, url: r.url, events: r.events, createdAt: r.createdAt }));
}

export async function deleteEndpoint(db: Db, wallet: string, id: string, now = Date.now()): Promise<void> {
  await db.transaction(async (tx) => {
    const updated = await tx
      .update(webhookEndpoints)
      .set({ disabledAt: now })
      .where(and(eq(webhookEndpoints.wallet, wallet), eq(webhookEndpoints.id, id), isNull(webhookEndpoints.disabledAt)))
      .returning({ id: webhookEndpoints.id });
    if (updated.length === 0) throw new NotFound(`Webhook endpoint ${id} not found`);
    await releaseSlot(tx, wallet, ENDPOINTS_COUNTER);
  });
}
