/**
 * The events API as it serves the outbox (src/webhooks/events.ts holds the reads and the shape of
 * an event). Here, not beside them, because the list's degraded answer is a rule of this layer
 * (src/domain/degraded.ts). Built once per app (src/deps.ts), so each route handler is one call
 * with a params object.
 */
import type { Db } from '../db/client.ts';
import { getEvent, listEvents } from '../webhooks/events.ts';
import type { Event } from '../contract/events.ts';
import type { WebhookEventType } from '../contract/webhooks.ts';
import { orDegraded } from './degraded.ts';

/** A page's length when the caller names none (the contract's default for limit). */
const DEFAULT_LIMIT = 50;

export interface EventServiceOptions {
  db: Db;
  now?: () => number;
}

export class EventService {
  private readonly now: () => number;

  constructor(private readonly o: EventServiceOptions) {
    this.now = o.now ?? Date.now;
  }

  /** GET /api/events: one page, newest first; empty and flagged while the database is unreachable. */
  list(p: { wallet: string; limit?: number | undefined; type?: WebhookEventType | undefined; startingAfter?: string | undefined }) {
    const page = { limit: p.limit ?? DEFAULT_LIMIT, type: p.type, startingAfter: p.startingAfter };
    return orDegraded(() => listEvents(this.o.db, p.wallet, page, this.now()), { events: [], has_more: false });
  }

  /** GET /api/events/{id}: one of the merchant's events; another's, the test event or an expired one is 404. */
  get(p: { wallet: string; id: string }): Promise<Event> {
    return getEvent(this.o.db, p.wallet, p.id, this.now());
  }
}
