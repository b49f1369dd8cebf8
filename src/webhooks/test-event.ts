/**
 * "Send test event": one `webhook.test` delivery to one endpoint, signed and sent by the
 * dispatcher like every other, so it proves the whole path (reachability, TLS, the receiver's
 * signature check). Tried once; its result is shown in the deliveries list.
 */
import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { webhookDeliveries, webhookEndpoints, webhookEvents } from '../db/schema.ts';
import { Conflict, NotFound } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { TEST_EVENT_TYPE } from './outbox.ts';

/**
 * Enqueues the test event. `writeId` comes from the request (its Idempotency-Key, or fresh): a
 * retry with the same key answers the same delivery instead of sending a second event.
 */
export async function enqueueTestEvent(
  db: Db,
  p: { wallet: string; endpointId: string; writeId: string },
  now = Date.now(),
): Promise<{ deliveryId: string; eventId: string }> {
  const dedupeKey = `${TEST_EVENT_TYPE}:${p.endpointId}:${p.writeId}`;
  return db.transaction(async (tx) => {
    const [endpoint] = await tx
      .select({ id: webhookEndpoints.id })
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.wallet, p.wallet), eq(webhookEndpoints.id, p.endpointId), isNull(webhookEndpoints.disabledAt)));
    if (endpoint === undefined) throw new NotFound(`Webhook endpoint ${p.endpointId} not found`);

    const earlier = async () => {
      const [row] = await tx
        .select({ deliveryId: webhookDeliveries.id, eventId: webhookEvents.id })
        .from(webhookEvents)
        .innerJoin(webhookDeliveries, and(eq(webhookDeliveries.wallet, webhookEvents.wallet), eq(webhookDeliveries.eventId, webhookEvents.id)))
        .where(and(eq(webhookEvents.wallet, p.wallet), eq(webhookEvents.dedupeKey, dedupeKey)));
      return row;
    };
    const retried = await earlier();
    if (retried !== undefined) return retried;

    // One test at a time per endpoint: a button pressed in a loop must not queue a flood.
    const [waiting] = await tx
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .innerJoin(webhookEvents, and(eq(webhookEvents.wallet, webhookDeliveries.wallet), eq(webhookEvents.id, webhookDeliveries.eventId)))
      .where(
        and(
          eq(webhookDeliveries.wallet, p.wallet),
          eq(webhookDeliveries.endpointId, p.endpointId),
          eq(webhookDeliveries.status, 'pending'),
          eq(webhookEvents.type, TEST_EVENT_TYPE),
        ),
      )
      .limit(1);
    if (waiting !== undefined) {
      throw new Conflict(`A test event to this endpoint is still being sent (delivery ${waiting.id}); wait for its result`);
    }

    const eventId = newId('msg', 16);
    const payload = {
      type: TEST_EVENT_TYPE,
      timestamp: new Date(now).toISOString(),
      data: { endpointId: p.endpointId, message: 'A test event sent from the Splitline admin app. No receipt changed.' },
    };
    const inserted = await tx
      .insert(webhookEvents)
      .values({ wallet: p.wallet, id: eventId, type: TEST_EVENT_TYPE, payload, dedupeKey, createdAt: now })
      .onConflictDoNothing()
      .returning({ id: webhookEvents.id });
    if (inserted.length === 0) {
      // The same request, concurrently: the first one's event is committed now.
      const first = await earlier();
      if (first === undefined) throw new Conflict('This test event is being sent by a concurrent request with the same Idempotency-Key');
      return first;
    }
    const deliveryId = newId('dlv');
    await tx.insert(webhookDeliveries).values({
      wallet: p.wallet,
      id: deliveryId,
      eventId,
      endpointId: p.endpointId,
      status: 'pending',
      nextAttemptAt: now,
      createdAt: now,
    });
    return { deliveryId, eventId };
  });
}
