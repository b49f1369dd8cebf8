/**
 * The SDK (packages/sdk) against the real service listening on loopback, through a small HTTP
 * proxy that can lose an answer after the service wrote, answer 503 or 429 itself, or pass the
 * request on, and records every attempt: retries keep one Idempotency-Key and write once (counted
 * in the database), list iterators walk every page, a refusal surfaces its code and message, and
 * webhooks.verify accepts a real delivery and refuses a changed one.
 */
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { pino } from 'pino';
import { receipts, webhookEvents } from '../src/db/schema.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { Splitline, SplitlineConnectionError, SplitlineError, WebhookVerificationError, webhooks, type Event, type RetryOptions } from '../packages/sdk/src/index.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { setUpMerchant } from './helpers/merchant.ts';
import { admin, signIn } from './helpers/session.ts';
import { webhookReceiver } from './helpers/webhook-receiver.ts';

/** What the proxy does with one request: pass it on, pass it on and cut the connection before the answer, or answer itself. */
type Step = 'forward' | 'lose-answer' | { status: number; headers?: Record<string, string>; body: unknown };

interface Attempt {
  method: string;
  url: string;
  idempotencyKey: string | undefined;
  /** The service's answer, when the proxy passed the request on. */
  upstreamStatus?: number;
  replayed?: boolean;
}

/** A proxy in front of `target` that plays `script` (then forwards) and records every attempt. */
async function proxyTo(target: string): Promise<{ url: string; script: Step[]; attempts: Attempt[]; server: Server }> {
  const script: Step[] = [];
  const attempts: Attempt[] = [];
  const upstream = new URL(target);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const attempt: Attempt = { method: req.method ?? '', url: req.url ?? '', idempotencyKey: header(req.headers, 'idempotency-key') };
      attempts.push(attempt);
      const step = script.shift() ?? 'forward';
      if (typeof step === 'object') {
        res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
        res.end(JSON.stringify(step.body));
        return;
      }
      const out = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
        (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (c: Buffer) => body.push(c));
          answer.on('end', () => {
            attempt.upstreamStatus = answer.statusCode;
            attempt.replayed = answer.headers['idempotent-replayed'] === 'true';
            // The service has written and answered; the client never hears it.
            if (step === 'lose-answer') return void res.socket?.destroy();
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(body));
          });
        },
      );
      out.on('error', () => res.socket?.destroy());
      out.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, script, attempts, server };
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

// Retries without the waits of production, so the file stays fast; the waits have a unit test below.
const FAST: RetryOptions = { maxRetries: 3, baseDelayMs: 5, maxDelayMs: 1_000 };
const silent = pino({ level: 'silent' });

let t: TestApp;
let service: string;
let proxy: Awaited<ReturnType<typeof proxyTo>>;
before(async () => {
  t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  service = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  proxy = await proxyTo(service);
});
after(async () => {
  await new Promise((r) => proxy.server.close(r));
  await t.close();
});
beforeEach(() => {
  proxy.script.length = 0;
  proxy.attempts.length = 0;
});

async function receiptRows(wallet: string, where?: { id: string }): Promise<number> {
  const rows = await t.deps.database.db
    .select({ n: sql<number>`count(*)::int` })
    .from(receipts)
    .where(where === undefined ? eq(receipts.wallet, wallet) : and(eq(receipts.wallet, wallet), eq(receipts.id, where.id)));
  return rows[0]!.n;
}

/** The SDK's error of a call that must fail. */
async function failure<E extends Error>(call: Promise<unknown>, type: new (...args: never[]) => E): Promise<E> {
  const err = await call.then(
    () => assert.fail('the call succeeded'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof type, `expected ${type.name}, got ${String(err)}`);
  return err;
}

describe('writes are retried with one Idempotency-Key and happen once', () => {
  test('a receipt whose answer was lost after the service stored it is created once; the retry gets the first answer', async () => {
    const m = await setUpMerchant(t);
    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: FAST });
    proxy.script.push('lose-answer');
    const created = await sdk.receipts.create({ id: 'sdk-lost-1', lineItems: [{ label: 'Coffee', priceUsd: 3.5, qty: 2 }], totalUsd: 7 });
    assert.equal(created.id, 'sdk-lost-1');
    assert.equal(created.status, 'pending');
    assert.match(created.paymentUrl, /\/pay\/sdk-lost-1\?t=/);
    const posts = proxy.attempts.filter((a) => a.method === 'POST');
    assert.equal(posts.length, 2, 'the first attempt and one retry');
    assert.equal(posts[0]!.upstreamStatus, 201, 'the first attempt reached the service and was stored');
    assert.match(posts[0]!.idempotencyKey ?? '', /^sdk_[0-9a-f-]{36}$/);
    assert.equal(posts[1]!.idempotencyKey, posts[0]!.idempotencyKey, 'the retry carries the same key');
    assert.equal(posts[1]!.replayed, true, 'the service answered the retry from its stored answer');
    assert.equal(await receiptRows(m.wallet), 1);
  });

  test('an order (no id of its own: only the key tells a retry from a new order) whose answer was lost is created once', async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'pen', name: 'Pen', priceUsd: 2 }] });
    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: FAST });
    proxy.script.push('lose-answer', 'lose-answer');
    const order = await sdk.orders.create({ items: [{ sku: 'pen', qty: 2 }] });
    assert.equal(order.receipt.totalUsd, 4);
    const posts = proxy.attempts.filter((a) => a.method === 'POST');
    assert.equal(posts.length, 3);
    assert.deepEqual(posts.map((p) => p.upstreamStatus), [200, 200, 200]);
    assert.deepEqual(posts.map((p) => p.replayed), [false, true, true]);
    assert.equal(new Set(posts.map((p) => p.idempotencyKey)).size, 1);
    assert.equal(await receiptRows(m.wallet), 1, 'one order, one receipt');
    // Another call is another order: a new key.
    await sdk.orders.create({ items: [{ sku: 'pen', qty: 2 }] });
    assert.equal(await receiptRows(m.wallet), 2);
    assert.notEqual(proxy.attempts.at(-1)!.idempotencyKey, posts[0]!.idempotencyKey);
  });

  test('503 with Retry-After and 429 are waited out and retried; the write happens once', async () => {
    const m = await setUpMerchant(t);
    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: FAST });
    proxy.script.push(
      { status: 503, headers: { 'retry-after': '0' }, body: { error: 'database_unavailable', message: 'The database is unavailable; retry shortly' } },
      { status: 429, headers: { 'retry-after': '0' }, body: { error: 'rate_limited', message: 'Rate limit exceeded; retry after resetAt' } },
    );
    const created = await sdk.receipts.create({ id: 'sdk-503', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
    assert.equal(created.id, 'sdk-503');
    assert.equal(proxy.attempts.length, 3);
    assert.equal(new Set(proxy.attempts.map((a) => a.idempotencyKey)).size, 1);
    assert.equal(await receiptRows(m.wallet, { id: 'sdk-503' }), 1);
  });

  test('retries stop after maxRetries: the error carries the status, the code, the message and the key to finish the write later', async () => {
    const m = await setUpMerchant(t);
    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: { ...FAST, maxRetries: 2 } });
    const busy = { status: 503, headers: { 'retry-after': '0' }, body: { error: 'database_unavailable', message: 'The database is unavailable; retry shortly' } };
    proxy.script.push(busy, busy, busy);
    const err = await failure(sdk.receipts.create({ id: 'sdk-busy', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 }), SplitlineError);
    assert.equal(err.status, 503);
    assert.equal(err.error, 'database_unavailable');
    assert.equal(err.message, '503 database_unavailable: The database is unavailable; retry shortly');
    assert.equal(proxy.attempts.length, 3, 'the first attempt and two retries');
    assert.equal(err.idempotencyKey, proxy.attempts[0]!.idempotencyKey);
    assert.equal(await receiptRows(m.wallet), 0);
    // Later, the same key finishes the same write, once.
    const later = await sdk.receipts.create({ id: 'sdk-busy', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 }, { idempotencyKey: err.idempotencyKey! });
    assert.equal(later.id, 'sdk-busy');
    assert.equal(proxy.attempts.at(-1)!.idempotencyKey, err.idempotencyKey);
    assert.equal(await receiptRows(m.wallet), 1);
  });

  test('a Retry-After longer than maxDelayMs is handed back at once, not slept through', async () => {
    const m = await setUpMerchant(t);
    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: FAST });
    proxy.script.push({ status: 429, headers: { 'retry-after': '3600' }, body: { error: 'rate_limited', message: 'Rate limit exceeded; retry after resetAt', resetAt: Date.now() + 3_600_000 } });
    const err = await failure(sdk.receipts.page(), SplitlineError);
    assert.equal(err.status, 429);
    assert.equal(err.error, 'rate_limited');
    assert.equal(typeof err.body.resetAt, 'number');
    assert.equal(proxy.attempts.length, 1);
  });

  test('a service that cannot be reached fails with SplitlineConnectionError after every attempt, naming the key', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const sdk = new Splitline({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'unused', retry: { ...FAST, maxRetries: 2 } });
    const err = await failure(sdk.receipts.create({ id: 'nowhere', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 }, { idempotencyKey: 'order-nowhere-1' }), SplitlineConnectionError);
    assert.equal(err.attempts, 3);
    assert.equal(err.idempotencyKey, 'order-nowhere-1');
  });
});

describe('refusals surface their code and message, and are not retried', () => {
  test('400 invalid_input names the field', async () => {
    const m = await setUpMerchant(t);
    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: FAST });
    const err = await failure(sdk.receipts.create({ id: 'sdk-bad', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: -1 }), SplitlineError);
    assert.equal(err.status, 400);
    assert.equal(err.error, 'invalid_input');
    assert.match(err.body.message, /totalUsd/);
    assert.match(err.correlationId ?? '', /.+/, 'the correlation id to quote');
    assert.equal(proxy.attempts.length, 1, 'a refusal is not retried');
    assert.equal(await receiptRows(m.wallet), 0);
  });

  test('401 for a wrong key, 404 for an unknown receipt, 409 for a key reused with another body', async () => {
    const m = await setUpMerchant(t);
    const wrong = new Splitline({ baseUrl: proxy.url, apiKey: 'not-a-key', retry: FAST });
    const unauthorized = await failure(wrong.receipts.page(), SplitlineError);
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.error, 'unauthorized');

    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: FAST });
    const missing = await failure(sdk.receipts.retrieve('no-such-receipt'), SplitlineError);
    assert.equal(missing.status, 404);
    assert.equal(missing.error, 'not_found');
    assert.match(missing.message, /no-such-receipt/);

    await sdk.receipts.create({ id: 'sdk-409-a', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 }, { idempotencyKey: 'shop-order-77' });
    const reused = await failure(
      sdk.receipts.create({ id: 'sdk-409-b', lineItems: [{ label: 'Tea', priceUsd: 3 }], totalUsd: 3 }, { idempotencyKey: 'shop-order-77' }),
      SplitlineError,
    );
    assert.equal(reused.status, 409);
    assert.equal(reused.error, 'conflict');
    assert.match(reused.message, /Idempotency-Key/);
    assert.equal(reused.idempotencyKey, 'shop-order-77');
    assert.equal(await receiptRows(m.wallet), 1);
  });

  test('the typed api client answers {data, error} without throwing', async () => {
    const m = await setUpMerchant(t);
    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: FAST });
    const { data, error, response } = await sdk.api.GET('/api/receipts/{id}', { params: { path: { id: 'nope' } } });
    assert.equal(response.status, 404);
    assert.equal(data, undefined);
    assert.equal(error?.error, 'not_found');
  });
});

describe('list iterators walk every page', () => {
  test('receipts: every receipt once, newest first, a page of `limit` at a time', async () => {
    const m = await setUpMerchant(t);
    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: FAST });
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      made.push((await sdk.receipts.create({ id: `sdk-list-${i}`, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 })).id);
    }
    proxy.attempts.length = 0;
    const seen: string[] = [];
    for await (const r of sdk.receipts.list({ limit: 3 })) seen.push(r.receiptId);
    const newestFirst = (await t.call(m.key, 'GET', '/api/receipts?limit=200')).body.receipts.map((r: { receiptId: string }) => r.receiptId);
    assert.deepEqual(seen, newestFirst);
    assert.deepEqual([...seen].sort(), [...made].sort());
    const pages = proxy.attempts.map((a) => new URL(a.url, 'http://x').searchParams);
    assert.equal(pages.length, 3, '3 + 3 + 1');
    assert.deepEqual(pages.map((p) => p.get('starting_after')), [null, seen[2], seen[5]]);
    assert.ok(pages.every((p) => p.get('limit') === '3'));

    // Breaking out early fetches no further page.
    proxy.attempts.length = 0;
    for await (const r of sdk.receipts.list({ limit: 3 })) if (r.receiptId === seen[1]) break;
    assert.equal(proxy.attempts.length, 1);

    // A filter that matches nothing ends at once.
    const none: unknown[] = [];
    for await (const r of sdk.receipts.list({ status: 'completed' })) none.push(r);
    assert.deepEqual(none, []);
  });

  test('an unknown cursor is refused by the service, and the iterator throws it', async () => {
    const m = await setUpMerchant(t);
    const sdk = new Splitline({ baseUrl: proxy.url, apiKey: m.key, retry: FAST });
    const err = await failure(
      (async () => {
        for await (const _ of sdk.receipts.list({ starting_after: 'not-mine' })) assert.fail('no receipt after an unknown cursor');
      })(),
      SplitlineError,
    );
    assert.equal(err.status, 400);
    assert.equal(err.error, 'invalid_input');
  });
});

describe('events and webhooks', () => {
  test('events.list walks every event; webhooks.verify accepts a real delivery and refuses a changed one', async () => {
    const rx = await webhookReceiver();
    try {
      const s = await signIn(t);
      const key = await t.key(s.wallet);
      const reg = await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url });
      assert.equal(reg.status, 201, JSON.stringify(reg.body));
      const secret: string = reg.body.secret;
      const sdk = new Splitline({ baseUrl: proxy.url, apiKey: key, retry: FAST });
      for (const id of ['sdk-ev-1', 'sdk-ev-2', 'sdk-ev-3']) {
        await sdk.receipts.create({ id, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2, metadata: { shopOrder: id } });
        const refund = await admin(t, s, 'POST', '/api/receipts/refund', { receiptId: id, wallet: s.wallet, buyer: '0x' + '11'.repeat(20), usd: 2 });
        assert.equal(refund.status, 200, JSON.stringify(refund.body));
      }

      const stored = await t.deps.database.db.select({ id: webhookEvents.id }).from(webhookEvents).where(eq(webhookEvents.wallet, s.wallet));
      assert.ok(stored.length >= 3, `events stored: ${stored.length}`);
      proxy.attempts.length = 0;
      const events: Event[] = [];
      for await (const e of sdk.events.list({ limit: 2 })) events.push(e);
      assert.deepEqual(events.map((e) => e.id).sort(), stored.map((e) => e.id).sort(), 'every event once');
      assert.ok(events.every((e, i) => i === 0 || events[i - 1]!.createdAt >= e.createdAt), 'newest first');
      assert.equal(proxy.attempts.length, Math.ceil(stored.length / 2));
      const refunded: Event[] = [];
      for await (const e of sdk.events.list({ type: 'receipt.refunded' })) refunded.push(e);
      assert.deepEqual(refunded.map((e) => e.data.receiptId).sort(), ['sdk-ev-1', 'sdk-ev-2', 'sdk-ev-3']);

      // The deliveries, sent by the dispatcher as the running service's would be.
      const d = new WebhookDispatcher({ db: t.deps.database.db, logger: silent, allowPrivate: true });
      for (let sent = 1, ticks = 0; sent > 0; ticks++) {
        assert.ok(ticks < 20, 'the dispatcher runs out of due deliveries');
        sent = await d.tick();
      }
      await d.stop();
      assert.equal(rx.got.length, stored.length);
      for (const { headers, body } of rx.got) {
        const event = webhooks.verify(body, headers, secret);
        assert.equal(event.id, headers['webhook-id']);
        assert.deepEqual(event, await sdk.events.retrieve(event.id), 'the delivery carries the event the API lists');
        assert.deepEqual(sdk.webhooks.verify(Buffer.from(body), new Headers(headers as Record<string, string>), secret), event);
      }

      const { headers, body } = rx.got[0]!;
      const tampered = body.replace('"totalUsd":2', '"totalUsd":2000');
      assert.notEqual(tampered, body);
      assert.throws(() => webhooks.verify(tampered, headers, secret), WebhookVerificationError);
      assert.throws(() => webhooks.verify(body, headers, 'whsec_' + Buffer.from('another secret').toString('base64')), WebhookVerificationError);
      assert.throws(() => webhooks.verify(body, { ...headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 3600) }, secret), WebhookVerificationError);
      assert.throws(() => webhooks.verify(body, { ...headers, 'webhook-signature': undefined }, secret), WebhookVerificationError);
    } finally {
      rx.server.close();
    }
  });
});

describe('backoff', () => {
  test('Retry-After is read as seconds or as an HTTP date', async () => {
    const { retryAfterMs } = await import('../packages/sdk/src/retry.ts');
    assert.equal(retryAfterMs('2'), 2000);
    assert.equal(retryAfterMs('0'), 0);
    assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4_000), 6_000);
    assert.equal(retryAfterMs('soon'), undefined);
    assert.equal(retryAfterMs(null), undefined);
  });
});
