/**
 * The events API (DESIGN.md "Integrator API", Events): GET /api/events and GET /api/events/{id}
 * list every event the webhooks send, for 30 days, newest first, each exactly as its webhook
 * delivery carries it, with keyset pagination; and every way a call can fail: the scope, a bad
 * filter, cursor or limit, another merchant's event, an expired one, the test event, an outage.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { pino } from 'pino';
import { subscriptions, webhookAttempts, webhookDeliveries, webhookEvents } from '../src/db/schema.ts';
import { EVENT_RETENTION_MS, type Event } from '../src/contract/events.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../src/contract/webhooks.ts';
import { createSubscription } from '../src/gateway/subscriptions.ts';
import { EventService } from '../src/domain/event-service.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { enqueueEvent, purgeOldEvents } from '../src/webhooks/outbox.ts';
import { appWithDatabaseAway, randomWallet, type Res, startTestApp } from './helpers/app.ts';
import { admin, signIn, type Session } from './helpers/session.ts';
import { webhookReceiver } from './helpers/webhook-receiver.ts';

const t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
const db = t.deps.database.db;
const silent = pino({ level: 'silent' });
after(async () => {
  await t.close();
});

/** Stores one event through the outbox, as a change in the service would; its id. */
async function recordEvent(wallet: string, type: WebhookEventType, at: number, data: Record<string, unknown> = {}): Promise<string> {
  const id = await db.transaction((tx) => enqueueEvent(tx, { wallet, type, dedupeKey: `${at}:${Math.random()}`, data: { receiptId: `r-${at}`, ...data } }, at));
  assert.ok(id !== null);
  return id;
}

function assertInvalid(res: Res, mentions: RegExp): void {
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.equal(res.body.error, 'invalid_input');
  assert.match(res.body.message, mentions);
}

/** Walks every page with `limit`, as a client catching up would; the events in the order seen. */
async function walk(key: string, query: string, limit: number): Promise<{ events: Event[]; pages: number }> {
  const events: Event[] = [];
  let after: string | undefined;
  for (let pages = 1; ; pages++) {
    const res = await t.call<{ events: Event[]; has_more: boolean }>(key, 'GET', `/api/events?limit=${limit}${query}${after ? `&starting_after=${after}` : ''}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.body.events.length <= limit);
    assert.ok(pages <= 100, 'the walk ends: a cursor that does not move on fails here rather than loop');
    events.push(...res.body.events);
    if (!res.body.has_more) return { events, pages };
    assert.equal(res.body.events.length, limit, 'a page with more after it is full');
    after = res.body.events.at(-1)!.id;
  }
}

describe('events are what the webhooks deliver', () => {
  let s: Session;
  let key: string;
  let rx: Awaited<ReturnType<typeof webhookReceiver>>;
  before(async () => {
    s = await signIn(t);
    key = await t.key(s.wallet);
    rx = await webhookReceiver();
  });
  after(() => {
    rx.server.close();
  });

  test('a refund made through the API is listed newest first, and each event equals its delivery body', async () => {
    const reg = await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url });
    assert.equal(reg.status, 201, JSON.stringify(reg.body));
    const created = await t.call(key, 'POST', '/api/receipts', {
      id: 'ev-1',
      lineItems: [{ label: 'Tea', priceUsd: 2 }],
      totalUsd: 2,
      metadata: { orderNumber: 'A-1' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const refund = await admin(t, s, 'POST', '/api/receipts/refund', { receiptId: 'ev-1', wallet: s.wallet, buyer: randomWallet(), usd: 2 });
    assert.equal(refund.status, 200, JSON.stringify(refund.body));

    const list = await t.call(key, 'GET', '/api/events');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.equal(list.body.has_more, false);
    assert.deepEqual(list.body.events.map((e: Event) => e.type).sort(), ['receipt.refund_recorded', 'receipt.refunded']);
    const [newest, older] = list.body.events as Event[];
    assert.ok(newest!.createdAt > older!.createdAt || (newest!.createdAt === older!.createdAt && newest!.id > older!.id), 'newest first');
    for (const e of list.body.events as Event[]) {
      assert.deepEqual(Object.keys(e), ['id', 'type', 'createdAt', 'timestamp', 'data']);
      assert.equal(e.timestamp, new Date(e.createdAt).toISOString());
      assert.equal(e.data.receiptId, 'ev-1');
      assert.deepEqual(e.data.metadata, { orderNumber: 'A-1' }, 'the receipt metadata is in every event');
      const one = await t.call(key, 'GET', `/api/events/${e.id}`);
      assert.equal(one.status, 200);
      assert.deepEqual(one.body, e);
    }

    const d = new WebhookDispatcher({ db, logger: silent, allowPrivate: true });
    assert.equal(await d.tick(), 2);
    await d.stop();
    assert.equal(rx.got.length, 2);
    for (const got of rx.got) {
      const id = String(got.headers['webhook-id']);
      const listed = (list.body.events as Event[]).find((e) => e.id === id);
      assert.ok(listed, `the delivery's webhook-id ${id} is a listed event id`);
      assert.deepEqual(JSON.parse(got.body), listed, 'the delivery body is the event as the API answers it');
    }
  });

  test('an event is recorded whether or not an endpoint listens for it', async () => {
    const wallet = randomWallet();
    const id = await recordEvent(wallet, 'write.rejected', Date.now(), { reason: 'never applies' });
    const res = await t.call(await t.key(wallet), 'GET', `/api/events/${id}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.type, 'write.rejected');
    assert.equal(res.body.data.reason, 'never applies');
  });
});

describe('pages, filters and their refusals', () => {
  const wallet = randomWallet();
  let key: string;
  /** Event ids, newest first, as the list must order them, and those of type receipt.completed. */
  let expected: string[];
  let completed: string[];
  const base = Date.now() - 3600_000;
  before(async () => {
    key = await t.key(wallet);
    const stored: { id: string; at: number; type: WebhookEventType }[] = [];
    const store = async (type: WebhookEventType, at: number) => stored.push({ id: await recordEvent(wallet, type, at), at, type });
    // Seven at distinct times and three sharing one millisecond, so the id breaks the tie.
    for (let i = 0; i < 7; i++) await store(i % 2 === 0 ? 'receipt.completed' : 'receipt.expired', base + i * 1000);
    for (let i = 0; i < 3; i++) await store('receipt.completed', base + 10_000);
    stored.sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1));
    expected = stored.map((e) => e.id);
    completed = stored.filter((e) => e.type === 'receipt.completed').map((e) => e.id);
  });

  test('walking with starting_after returns every event once, newest first, on any page size', async () => {
    for (const limit of [1, 2, 3, 10, 100]) {
      const { events, pages } = await walk(key, '', limit);
      assert.deepEqual(events.map((e) => e.id), expected, `limit ${limit}`);
      assert.equal(pages, Math.max(1, Math.ceil(expected.length / limit)));
    }
  });

  test('the default page is 50 and says has_more when more match', async () => {
    const many = randomWallet();
    for (let i = 0; i < 51; i++) await recordEvent(many, 'receipt.completed', base + i);
    const res = await t.call(await t.key(many), 'GET', '/api/events');
    assert.equal(res.body.events.length, 50);
    assert.equal(res.body.has_more, true);
  });

  test('events recorded between two pages neither repeat nor shift the next page', async () => {
    const own = randomWallet();
    const ownKey = await t.key(own);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.unshift(await recordEvent(own, 'receipt.completed', base + i * 1000));
    const first = await t.call(ownKey, 'GET', '/api/events?limit=4');
    assert.deepEqual(first.body.events.map((e: Event) => e.id), ids.slice(0, 4));
    await recordEvent(own, 'receipt.completed', Date.now());
    const next = await t.call(ownKey, 'GET', `/api/events?limit=4&starting_after=${first.body.events[3].id}`);
    assert.deepEqual(next.body.events.map((e: Event) => e.id), ids.slice(4, 8));
    assert.equal(next.body.has_more, false);
  });

  test('type filters, also across pages, and a cursor of another type still marks the place', async () => {
    const { events } = await walk(key, '&type=receipt.completed', 2);
    assert.deepEqual(events.map((e) => e.id), completed);
    assert.ok(events.every((e) => e.type === 'receipt.completed'));
    // After the newest completed event: the expired ones, which it sorts before.
    const expiredOnly = await t.call(key, 'GET', `/api/events?type=receipt.expired&starting_after=${completed[0]}`);
    assert.equal(expiredOnly.status, 200);
    assert.deepEqual(expiredOnly.body.events.map((e: Event) => e.id), expected.filter((id) => !completed.includes(id)));
  });

  test('a type that is not an event type is 400 invalid_input', async () => {
    assertInvalid(await t.call(key, 'GET', '/api/events?type=receipt.paid'), /type/);
    assertInvalid(await t.call(key, 'GET', '/api/events?type=webhook.test'), /type/);
  });

  test('a limit outside 1..100 is 400 invalid_input', async () => {
    for (const limit of ['0', '101', '-1', 'ten', '2.5']) assertInvalid(await t.call(key, 'GET', `/api/events?limit=${limit}`), /limit/);
  });

  test('starting_after naming no event of this merchant is 400 invalid_input naming it', async () => {
    assertInvalid(await t.call(key, 'GET', '/api/events?starting_after=msg_nosuchevent'), /msg_nosuchevent/);
    assertInvalid(await t.call(key, 'GET', '/api/events?starting_after=not-an-event-id'), /starting_after/);
    const theirs = await recordEvent(randomWallet(), 'receipt.completed', Date.now());
    assertInvalid(await t.call(key, 'GET', `/api/events?starting_after=${theirs}`), new RegExp(theirs));
  });
});

describe('what is never shown', () => {
  test("another merchant's events: not listed, and 404 by id", async () => {
    const mine = randomWallet();
    const other = randomWallet();
    const theirs = await recordEvent(other, 'receipt.completed', Date.now(), { secret: 'other-marker' });
    const otherKey = await t.key(other);
    assert.equal((await t.call(otherKey, 'GET', `/api/events/${theirs}`)).status, 200, 'control: the owner sees it');
    const key = await t.key(mine);
    const res = await t.call(key, 'GET', `/api/events/${theirs}`);
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'not_found');
    const list = await t.call(key, 'GET', '/api/events?limit=100');
    assert.ok(!JSON.stringify(list.body).includes('other-marker'));
  });

  test('an event older than 30 days: not listed, 404 by id, 400 as a cursor', async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    const old = await recordEvent(wallet, 'receipt.completed', Date.now() - EVENT_RETENTION_MS - 60_000);
    const recent = await recordEvent(wallet, 'receipt.completed', Date.now() - EVENT_RETENTION_MS + 3600_000);
    const list = await t.call(key, 'GET', '/api/events');
    assert.deepEqual(list.body.events.map((e: Event) => e.id), [recent]);
    assert.equal((await t.call(key, 'GET', `/api/events/${old}`)).status, 404);
    assertInvalid(await t.call(key, 'GET', `/api/events?starting_after=${old}`), new RegExp(old));
  });

  test('the purge deletes events past 30 days with their deliveries and attempts; one still being retried waits, newer ones stay', async () => {
    const wallet = randomWallet();
    const at = Date.now() - EVENT_RETENTION_MS - 60_000;
    const old = await recordEvent(wallet, 'receipt.completed', at);
    const retried = await recordEvent(wallet, 'receipt.completed', at);
    const recent = await recordEvent(wallet, 'receipt.completed', Date.now() - 3600_000);
    const delivery = { wallet, endpointId: 'we_purge', attempts: 1, nextAttemptAt: at, createdAt: at };
    await db.insert(webhookDeliveries).values([
      { ...delivery, id: 'wd_old', eventId: old, status: 'delivered', deliveredAt: at },
      { ...delivery, id: 'wd_retried', eventId: retried, status: 'pending', nextAttemptAt: Date.now() + 60_000 },
    ]);
    await db.insert(webhookAttempts).values([
      { wallet, deliveryId: 'wd_old', at, statusCode: 200, durationMs: 12 },
      { wallet, deliveryId: 'wd_retried', at, statusCode: 500, durationMs: 12 },
    ]);
    assert.ok((await purgeOldEvents(db)) >= 1);
    const events = await db.select({ id: webhookEvents.id }).from(webhookEvents).where(eq(webhookEvents.wallet, wallet));
    assert.deepEqual(events.map((e) => e.id).sort(), [retried, recent].sort());
    const deliveries = await db.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(eq(webhookDeliveries.wallet, wallet));
    assert.deepEqual(deliveries.map((d) => d.id), ['wd_retried']);
    const attempts = await db.select({ deliveryId: webhookAttempts.deliveryId }).from(webhookAttempts).where(eq(webhookAttempts.wallet, wallet));
    assert.deepEqual(attempts.map((a) => a.deliveryId), ['wd_retried']);
  });

  test('the test event an endpoint is sent on request is not an event of the shop: not listed, 404 by id', async () => {
    const s = await signIn(t);
    const rx = await webhookReceiver();
    try {
      const reg = await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url });
      const sent = await admin(t, s, 'POST', `/api/admin/webhooks/${reg.body.id}/test`);
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      const [row] = await db.select({ id: webhookEvents.id }).from(webhookEvents).where(eq(webhookEvents.wallet, s.wallet));
      assert.ok(row, 'the test event is in the outbox');
      const key = await t.key(s.wallet);
      assert.deepEqual((await t.call(key, 'GET', '/api/events')).body.events, []);
      assert.equal((await t.call(key, 'GET', `/api/events/${row.id}`)).status, 404);
    } finally {
      rx.server.close();
    }
  });

  test('an unknown event id is 404 not_found', async () => {
    const res = await t.call(await t.key(randomWallet()), 'GET', '/api/events/msg_nosuchevent');
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'not_found');
  });
});

describe('the events:read scope', () => {
  test('a key without events:read is 403 naming it; no key is 401', async () => {
    const narrow = await t.key(randomWallet(), { scopes: ['receipts:read'] });
    for (const url of ['/api/events', '/api/events/msg_any']) {
      const res = await t.call(narrow, 'GET', url);
      assert.equal(res.status, 403, url);
      assert.equal(res.body.error, 'forbidden');
      assert.match(res.body.message, /events:read/);
      assert.equal((await t.call(null, 'GET', url)).status, 401);
    }
  });

  test('the default product carries it, the checkout product does not', async () => {
    const wallet = randomWallet();
    const full = await createSubscription(db, { wallet });
    assert.ok(full.scopes.includes('events:read'), JSON.stringify(full.scopes));
    assert.equal((await t.call(full.primaryKey, 'GET', '/api/events')).status, 200);
    const checkout = await createSubscription(db, { wallet, product: 'checkout' });
    assert.equal((await t.call(checkout.primaryKey, 'GET', '/api/events')).status, 403);
  });

  test('the admin app reads them with the session', async () => {
    const s = await signIn(t);
    const res = await t.call(null, 'GET', '/api/events', undefined, { cookie: s.cookie });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test('migration 0023: a default-product key issued as "everything" before it gains events:read; a narrower one does not', async () => {
    const wallet = randomWallet();
    const everything = await createSubscription(db, { wallet });
    const narrower = await createSubscription(db, { wallet, scopes: ['receipts:read', 'receipts:write'] });
    const checkout = await createSubscription(db, { wallet, product: 'checkout' });
    // As they were stored before events:read existed.
    for (const sub of [everything, narrower, checkout]) {
      await db.update(subscriptions).set({ scopes: sql`${subscriptions.scopes} - 'events:read'` }).where(eq(subscriptions.id, sub.id));
    }
    const migration = readFileSync(new URL('../migrations/0023_events_api.sql', import.meta.url), 'utf8');
    const update = migration.split('--> statement-breakpoint').find((s) => s.includes('UPDATE'));
    assert.ok(update);
    await db.execute(sql.raw(update));
    await db.execute(sql.raw(update)); // again: changes nothing
    const scopesOf = async (id: string) => (await db.select({ scopes: subscriptions.scopes }).from(subscriptions).where(eq(subscriptions.id, id)))[0]!.scopes;
    const gained = await scopesOf(everything.id);
    assert.equal(gained.filter((x) => x === 'events:read').length, 1);
    assert.ok(!(await scopesOf(narrower.id)).includes('events:read'));
    assert.ok(!(await scopesOf(checkout.id)).includes('events:read'));
  });
});

describe('while the database is unreachable', () => {
  test('the list answers 200 empty with degraded: true; one event is 503 database_unavailable', async () => {
    const key = await t.key(randomWallet());
    assert.equal((await t.call(key, 'GET', '/api/events')).status, 200, 'the key is known before the outage');
    const { app, close } = await appWithDatabaseAway(t, (unreachable) => ({ events: new EventService({ db: unreachable }) }));
    try {
      const headers = { 'ocp-apim-subscription-key': key };
      const list = await app.inject({ method: 'GET', url: '/api/events', headers });
      assert.equal(list.statusCode, 200);
      assert.deepEqual(list.json(), { events: [], has_more: false, degraded: true, reason: 'database_unavailable' });
      const one = await app.inject({ method: 'GET', url: '/api/events/msg_any', headers });
      assert.equal(one.statusCode, 503);
      assert.equal(one.json().error, 'database_unavailable');
      assert.ok(one.headers['retry-after']);
    } finally {
      await close();
    }
  });
});

test('every event type a webhook endpoint can subscribe to can be filtered on', async () => {
  const wallet = randomWallet();
  const key = await t.key(wallet);
  for (const type of WEBHOOK_EVENT_TYPES) await recordEvent(wallet, type, Date.now());
  for (const type of WEBHOOK_EVENT_TYPES) {
    const res = await t.call(key, 'GET', `/api/events?type=${type}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.events.map((e: Event) => e.type), [type]);
  }
});
