/**
 * The events API's reads (GET /api/events, GET /api/events/{id}) and the one shape of an event,
 * which the webhook dispatcher sends as a delivery's body too: the list and a delivery can never
 * disagree about what an event says.
 *
 * Every event the webhooks send is in the outbox (webhook_events), whether or not the merchant has
 * an endpoint: it is written with the change it reports, in one transaction. The API lists the
 * last EVENT_RETENTION_DAYS of them, newest first, with keyset pagination on (created_at, id) read
 * from webhook_events_wallet_created_idx (never OFFSET: events written between two pages neither
 * repeat nor shift the rest). The test event an endpoint is sent on request is not an event of
 * the merchant's data and is never listed.
 */
import { and, eq, gte, ne, sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { webhookEvents } from '../db/schema.ts';
import { InvalidInput, NotFound } from '../lib/errors.ts';
import { EVENT_RETENTION_DAYS, EVENT_RETENTION_MS, type Event } from '../contract/events.ts';
import { TEST_EVENT_TYPE, type WebhookEventType } from '../contract/webhooks.ts';

/** An outbox row, as much of it as an event shows. */
export interface EventRow {
  id: string;
  type: string;
  createdAt: number;
  payload: Record<string, unknown>;
}

/**
 * The event as the API answers it and as a webhook delivery carries it. Built from the row, not
 * from the stored payload alone, so events stored before the payload carried its id and time
 * answer the same way.
 */
export function eventOf(row: EventRow): Event {
  const timestamp = typeof row.payload.timestamp === 'string' ? row.payload.timestamp : new Date(row.createdAt).toISOString();
  const data = (row.payload.data ?? {}) as Record<string, unknown>;
  return { id: row.id, type: row.type as WebhookEventType, createdAt: row.createdAt, timestamp, data };
}

export interface EventPage {
  limit: number;
  type?: WebhookEventType;
  /** An event id: the page continues after it in the list's order. */
  startingAfter?: string;
}

const columns = { id: webhookEvents.id, type: webhookEvents.type, createdAt: webhookEvents.createdAt, payload: webhookEvents.payload };

/** What the API may show of `wallet`'s events at `now`: its own, not the test event, not older than the retention. */
const listable = (wallet: string, now: number) =>
  and(eq(webhookEvents.wallet, wallet), ne(webhookEvents.type, TEST_EVENT_TYPE), gte(webhookEvents.createdAt, now - EVENT_RETENTION_MS));

/** One page of the merchant's events, newest first. An unknown `startingAfter` is 400 invalid_input. */
export async function listEvents(db: Db, wallet: string, page: EventPage, now = Date.now()): Promise<{ events: Event[]; has_more: boolean }> {
  let after: { createdAt: number; id: string } | undefined;
  if (page.startingAfter !== undefined) {
    const [cursor] = await db
      .select({ createdAt: webhookEvents.createdAt, id: webhookEvents.id })
      .from(webhookEvents)
      .where(and(listable(wallet, now), eq(webhookEvents.id, page.startingAfter)));
    if (cursor === undefined) {
      throw new InvalidInput(`starting_after: no event ${JSON.stringify(page.startingAfter)} of this merchant in the last ${EVENT_RETENTION_DAYS} days`);
    }
    after = cursor;
  }
  const rows = await db
    .select(columns)
    .from(webhookEvents)
    .where(
      and(
        listable(wallet, now),
        page.type === undefined ? undefined : eq(webhookEvents.type, page.type),
        after === undefined ? undefined : sql`(${webhookEvents.createdAt}, ${webhookEvents.id}) < (${after.createdAt}::bigint, ${after.id}::text)`,
      ),
    )
    // NULLS LAST, as the index is built (both columns are NOT NULL, so the order is the same):
    // with the default NULLS FIRST the planner would sort the merchant's events instead.
    .orderBy(sql`${webhookEvents.createdAt} desc nulls last`, sql`${webhookEvents.id} desc nulls last`)
    .limit(page.limit + 1);
  return { events: rows.slice(0, page.limit).map(eventOf), has_more: rows.length > page.limit };
}

/** One of the merchant's events; another merchant's, the test event or one past the retention: 404. */
export async function getEvent(db: Db, wallet: string, id: string, now = Date.now()): Promise<Event> {
  const [row] = await db
    .select(columns)
    .from(webhookEvents)
    .where(and(listable(wallet, now), eq(webhookEvents.id, id)));
  if (row === undefined) throw new NotFound(`Event ${id} not found`);
  return eventOf(row);
}
