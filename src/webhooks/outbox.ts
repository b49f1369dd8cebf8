/**
 * The webhook outbox. Events are written in the same transaction as the change they report, so a
 * change and its notification commit together or not at all; delivery happens afterwards.
 */
import { and, asc, desc, eq, isNull, lte, sql } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.ts';
import { webhookAttempts, webhookDeliveries, webhookEndpoints, webhookEvents } from '../db/schema.ts';
import { NotFound } from '../domain/errors.ts';
import { newId } from '../gateway/keys.ts';

export const WEBHOOK_EVENT_TYPES = [
  'receipt.payment_received',
  'receipt.completed',
  'receipt.tx_mismatch',
  'receipt.expired',
  'receipt.refunded',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * Retry schedule after each failed attempt (ms): quick at first, then hourly; the last retry
 * comes more than 24 hours after the first attempt.
 */
export const RETRY_DELAYS_MS = [
  5_000, 30_000, 2 * 60_000, 10 * 60_000, 30 * 60_000, 60 * 60_000, 2 * 3600_000, 4 * 3600_000, 6 * 3600_000,
  8 * 3600_000, 8 * 3600_000,
];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** Records an event and one delivery per subscribed endpoint. Enqueueing the same event twice is a no-op. */
export async function enqueueEvent(
  tx: Tx,
  p: { wallet: string; type: WebhookEventType; dedupeKey: string; data: Record<string, unknown> },
  now = Date.now(),
): Promise<string | null> {
  const id = newId('msg', 16);
  const payload = { type: p.type, timestamp: new Date(now).toISOString(), data: p.data };
  const [event] = await tx
    .insert(webhookEvents)
    .values({ wallet: p.wallet, id, type: p.type, payload, dedupeKey: `${p.type}:${p.dedupeKey}`, createdAt: now })
    .onConflictDoNothing()
    .returning({ id: webhookEvents.id });
  if (event === undefined) return null;
  const endpoints = await tx
    .select({ id: webhookEndpoints.id, events: webhookEndpoints.events })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.wallet, p.wallet), isNull(webhookEndpoints.disabledAt)));
  const targets = endpoints.filter((e) => e.events.includes(p.type));
  if (targets.length > 0) {
    await tx.insert(webhookDeliveries).values(
      targets.map((e) => ({
        wallet: p.wallet,
        id: newId('dlv'),
        eventId: id,
        endpointId: e.id,
        status: 'pending' as const,
        nextAttemptAt: now,
        createdAt: now,
      })),
    );
  }
  return id;
}

export interface DueDelivery {
  wallet: string;
  id: string;
  eventId: string;
  attempts: number;
  url: string;
  secret: string;
  payload: Record<string, unknown>;
}

export async function dueDeliveries(db: Db, now: number, limit: number): Promise<DueDelivery[]> {
  return db
    .select({
      wallet: webhookDeliveries.wallet,
      id: webhookDeliveries.id,
      eventId: webhookDeliveries.eventId,
      attempts: webhookDeliveries.attempts,
      url: webhookEndpoints.url,
      secret: webhookEndpoints.secret,
      payload: webhookEvents.payload,
    })
    .from(webhookDeliveries)
    .innerJoin(
      webhookEndpoints,
      and(eq(webhookEndpoints.wallet, webhookDeliveries.wallet), eq(webhookEndpoints.id, webhookDeliveries.endpointId)),
    )
    .innerJoin(webhookEvents, and(eq(webhookEvents.wallet, webhookDeliveries.wallet), eq(webhookEvents.id, webhookDeliveries.eventId)))
    .where(and(eq(webhookDeliveries.status, 'pending'), lte(webhookDeliveries.nextAttemptAt, now), isNull(webhookEndpoints.disabledAt)))
    .orderBy(asc(webhookDeliveries.nextAttemptAt))
    .limit(limit);
}

export async function recordAttempt(
  db: Db,
  d: Pick<DueDelivery, 'wallet' | 'id' | 'attempts'>,
  outcome: { ok: boolean; statusCode: number | null; error: string | null; durationMs: number },
  now = Date.now(),
): Promise<'delivered' | 'pending' | 'failed'> {
  const attempts = d.attempts + 1;
  const status = outcome.ok ? 'delivered' : attempts >= MAX_ATTEMPTS ? 'failed' : 'pending';
  await db.transaction(async (tx) => {
    await tx.insert(webhookAttempts).values({
      wallet: d.wallet,
      deliveryId: d.id,
      at: now,
      statusCode: outcome.statusCode,
      error: outcome.error,
      durationMs: outcome.durationMs,
    });
    await tx
      .update(webhookDeliveries)
      .set({
        status,
        attempts,
        lastStatusCode: outcome.statusCode,
        lastError: outcome.error,
        nextAttemptAt: status === 'pending' ? now + RETRY_DELAYS_MS[attempts - 1]! : now,
        deliveredAt: outcome.ok ? now : null,
      })
      .where(and(eq(webhookDeliveries.wallet, d.wallet), eq(webhookDeliveries.id, d.id)));
  });
  return status;
}

/** Puts a delivery back in the queue now (manual redelivery from the admin app). */
export async function redeliver(db: Db, wallet: string, deliveryId: string, now = Date.now()): Promise<void> {
  const rows = await db
    .update(webhookDeliveries)
    .set({ status: 'pending', nextAttemptAt: now, attempts: sql`least(${webhookDeliveries.attempts}, ${MAX_ATTEMPTS - 1})` })
    .where(and(eq(webhookDeliveries.wallet, wallet), eq(webhookDeliveries.id, deliveryId)))
    .returning({ id: webhookDeliveries.id });
  if (rows.length === 0) throw new NotFound(`Delivery ${deliveryId} not found`);
}

export async function listDeliveries(db: Db, wallet: string, limit = 100) {
  const rows = await db
    .select({
      id: webhookDeliveries.id,
      eventId: webhookDeliveries.eventId,
      endpointId: webhookDeliveries.endpointId,
      type: webhookEvents.type,
      status: webhookDeliveries.status,
      attempts: webhookDeliveries.attempts,
      nextAttemptAt: webhookDeliveries.nextAttemptAt,
      lastStatusCode: webhookDeliveries.lastStatusCode,
      lastError: webhookDeliveries.lastError,
      createdAt: webhookDeliveries.createdAt,
      deliveredAt: webhookDeliveries.deliveredAt,
    })
    .from(webhookDeliveries)
    .innerJoin(webhookEvents, and(eq(webhookEvents.wallet, webhookDeliveries.wallet), eq(webhookEvents.id, webhookDeliveries.eventId)))
    .where(eq(webhookDeliveries.wallet, wallet))
    .orderBy(desc(webhookDeliveries.createdAt))
    .limit(limit);
  const attempts = await db
    .select()
    .from(webhookAttempts)
    .where(eq(webhookAttempts.wallet, wallet))
    .orderBy(desc(webhookAttempts.seq))
    .limit(limit * 5);
  return rows.map((r) => ({
    ...r,
    log: attempts
      .filter((a) => a.deliveryId === r.id)
      .map((a) => ({ at: a.at, statusCode: a.statusCode, error: a.error, durationMs: a.durationMs })),
  }));
}
