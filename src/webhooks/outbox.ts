/**
 * The webhook outbox. Events are written in the same transaction as the change they report, so a
 * change and its notification commit together or not at all; delivery happens afterwards.
 */
import { and, asc, desc, eq, isNull, lte, notInArray, sql } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.ts';
import { rowsOf } from '../db/rows.ts';
import { webhookAttempts, webhookDeliveries, webhookEndpoints, webhookEvents } from '../db/schema.ts';
import { NotFound } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { explainDeliveryError } from './errors.ts';

import { TEST_EVENT_TYPE, type WebhookEventType } from '../contract/webhooks.ts';
import { EVENT_RETENTION_MS } from '../contract/events.ts';
export { TEST_EVENT_TYPE, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../contract/webhooks.ts';

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
  endpointId: string;
  type: string;
  attempts: number;
  url: string;
  secret: string;
  payload: Record<string, unknown>;
  /** When the event happened, Unix ms. */
  eventCreatedAt: number;
}

export interface DueQuery {
  /** At most this many deliveries. */
  limit: number;
  /** At most this many of one endpoint. */
  perEndpoint: number;
  /** At most this many of one merchant. */
  perMerchant: number;
  /** Left out: deliveries already in flight, and endpoints and merchants with no room left. */
  skipDeliveries?: string[];
  skipEndpoints?: string[];
  skipWallets?: string[];
}

/**
 * Due deliveries in a fair order: round-robin over merchants, and within a merchant over its
 * endpoints, oldest first within each. Every merchant's first due delivery comes before any
 * merchant's second, so however much one merchant has due it cannot push another's out of the
 * batch.
 */
export async function dueDeliveries(db: Db, now: number, q: DueQuery): Promise<DueDelivery[]> {
  const d = webhookDeliveries;
  const e = webhookEndpoints;
  const ranked = db
    .select({
      wallet: d.wallet,
      id: d.id,
      nextAttemptAt: d.nextAttemptAt,
      endpointRank: sql<number>`row_number() over (partition by ${d.wallet}, ${d.endpointId} order by ${d.nextAttemptAt}, ${d.id})`.as(
        'endpoint_rank',
      ),
    })
    .from(d)
    .innerJoin(e, and(eq(e.wallet, d.wallet), eq(e.id, d.endpointId)))
    .where(
      and(
        eq(d.status, 'pending'),
        lte(d.nextAttemptAt, now),
        isNull(e.disabledAt),
        q.skipDeliveries?.length ? notInArray(d.id, q.skipDeliveries) : undefined,
        q.skipEndpoints?.length ? notInArray(d.endpointId, q.skipEndpoints) : undefined,
        q.skipWallets?.length ? notInArray(d.wallet, q.skipWallets) : undefined,
      ),
    )
    .as('ranked');
  const fair = db
    .select({
      wallet: ranked.wallet,
      id: ranked.id,
      nextAttemptAt: ranked.nextAttemptAt,
      merchantRank: sql<number>`row_number() over (partition by ${ranked.wallet} order by ${ranked.endpointRank}, ${ranked.nextAttemptAt}, ${ranked.id})`.as(
        'merchant_rank',
      ),
    })
    .from(ranked)
    .where(lte(ranked.endpointRank, q.perEndpoint))
    .as('fair');
  return db
    .select({
      wallet: d.wallet,
      id: d.id,
      eventId: d.eventId,
      endpointId: d.endpointId,
      type: webhookEvents.type,
      attempts: d.attempts,
      url: e.url,
      secret: e.secret,
      payload: webhookEvents.payload,
      eventCreatedAt: webhookEvents.createdAt,
    })
    .from(fair)
    .innerJoin(d, and(eq(d.wallet, fair.wallet), eq(d.id, fair.id)))
    .innerJoin(e, and(eq(e.wallet, d.wallet), eq(e.id, d.endpointId)))
    .innerJoin(webhookEvents, and(eq(webhookEvents.wallet, d.wallet), eq(webhookEvents.id, d.eventId)))
    .where(lte(fair.merchantRank, q.perMerchant))
    .orderBy(asc(fair.merchantRank), asc(fair.nextAttemptAt), asc(fair.id))
    .limit(q.limit);
}

export async function recordAttempt(
  db: Db,
  d: Pick<DueDelivery, 'wallet' | 'id' | 'attempts'> & { type?: string },
  outcome: { ok: boolean; statusCode: number | null; error: string | null; durationMs: number },
  now = Date.now(),
): Promise<'delivered' | 'pending' | 'failed'> {
  const attempts = d.attempts + 1;
  const maxAttempts = d.type === TEST_EVENT_TYPE ? 1 : MAX_ATTEMPTS;
  const status = outcome.ok ? 'delivered' : attempts >= maxAttempts ? 'failed' : 'pending';
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
      receiptId: sql<string | null>`${webhookEvents.payload} -> 'data' ->> 'receiptId'`,
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
  return rows.map((r) => {
    const last = explainDeliveryError(r.lastError);
    return {
      ...r,
      receiptId: r.receiptId ?? null,
      lastErrorCode: last?.code ?? null,
      lastErrorText: last?.text ?? null,
      log: attempts
        .filter((a) => a.deliveryId === r.id)
        .map((a) => {
          const why = explainDeliveryError(a.error);
          return { at: a.at, statusCode: a.statusCode, error: a.error, errorCode: why?.code ?? null, errorText: why?.text ?? null, durationMs: a.durationMs };
        }),
    };
  });
}

/** Events purged per statement: a backlog goes in several, none holding locks for long. */
const PURGE_BATCH = 1000;

/**
 * Deletes events older than EVENT_RETENTION_DAYS (the events API stopped showing them then) with
 * their deliveries and attempts, except an event whose delivery is still being retried: it goes
 * once that delivery ends. Returns how many events went.
 */
export async function purgeOldEvents(db: Db, now = Date.now()): Promise<number> {
  const cutoff = now - EVENT_RETENTION_MS;
  let purged = 0;
  for (;;) {
    const gone = await db.execute(sql`
      with old as (
        select e.wallet, e.id from ${webhookEvents} e
        where e.created_at < ${cutoff}
          and not exists (select 1 from ${webhookDeliveries} d where d.wallet = e.wallet and d.event_id = e.id and d.status = 'pending')
        limit ${PURGE_BATCH}
      ), deliveries as (
        delete from ${webhookDeliveries} d using old where d.wallet = old.wallet and d.event_id = old.id returning d.wallet, d.id
      ), attempts as (
        delete from ${webhookAttempts} a using deliveries where a.wallet = deliveries.wallet and a.delivery_id = deliveries.id returning 1
      ), events as (
        delete from ${webhookEvents} e using old where e.wallet = old.wallet and e.id = old.id returning 1
      )
      select count(*)::int as n from events`);
    const n = Number(rowsOf(gone)[0]?.n ?? 0);
    purged += n;
    if (n < PURGE_BATCH) return purged;
  }
}
