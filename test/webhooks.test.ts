import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { inArray } from 'drizzle-orm';
import { webhookDeliveries } from '../src/db/schema.ts';
import { dueDeliveries, MAX_ATTEMPTS, RETRY_DELAYS_MS } from '../src/webhooks/outbox.ts';
import { verifyWebhook } from '../src/webhooks/sign.ts';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';
import { admin, signIn, type Session } from './helpers/session.ts';
import { webhookReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
const silent = pino({ level: 'silent' });
before(async () => {
  t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
});
after(async () => {
  await t.close();
});

async function fullyRefunded(s: Session, id: string) {
  const key = await t.key(s.wallet);
  await t.call(key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'A', priceUsd: 2 }], totalUsd: 2 });
  const res = await admin(t, s, 'POST', '/api/receipts/refund', { receiptId: id, wallet: s.wallet, buyer: randomWallet(), usd: 2 });
  assert.equal(res.status, 200);
}

describe('webhook delivery', () => {
  test('a full refund is delivered once, signed per Standard Webhooks', async () => {
    const rx = await webhookReceiver([]);
    const s = await signIn(t);
    const reg = await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url, events: ['receipt.refunded'] });
    assert.equal(reg.status, 201, JSON.stringify(reg.body));
    await fullyRefunded(s, 'wh-1');
    const d = new WebhookDispatcher({ db: t.deps.database.db, logger: silent, allowPrivate: true });
    assert.equal(await d.tick(), 1);
    assert.equal(await d.tick(), 0, 'nothing is sent twice');
    await d.stop();
    assert.equal(rx.got.length, 1);
    const { headers, body } = rx.got[0]!;
    const ok = verifyWebhook(
      reg.body.secret,
      { id: String(headers['webhook-id']), timestamp: String(headers['webhook-timestamp']), signature: String(headers['webhook-signature']) },
      body,
    );
    assert.ok(ok, 'signature verifies with the endpoint secret');
    assert.ok(!verifyWebhook('whsec_' + Buffer.from('other').toString('base64'), {
      id: String(headers['webhook-id']), timestamp: String(headers['webhook-timestamp']), signature: String(headers['webhook-signature']),
    }, body));
    const payload = JSON.parse(body);
    assert.equal(payload.type, 'receipt.refunded');
    assert.equal(payload.data.receiptId, 'wh-1');
    assert.equal(payload.data.refundedUsd, 2);
    const log = await admin(t, s, 'GET', '/api/admin/webhooks/deliveries');
    assert.equal(log.body.deliveries[0].status, 'delivered');
    assert.equal(log.body.deliveries[0].log.length, 1);
    rx.server.close();
  });

  test('a failing endpoint is retried with backoff, every attempt logged; redelivery works', async () => {
    const rx = await webhookReceiver([500, 503]);
    const s = await signIn(t);
    await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url, events: ['receipt.refunded'] });
    await fullyRefunded(s, 'wh-2');
    const d = new WebhookDispatcher({ db: t.deps.database.db, logger: silent, allowPrivate: true });
    const t0 = Date.now();
    assert.equal(await d.tick(t0), 1);
    assert.equal(await d.tick(t0 + 1000), 0, 'not due before the backoff');
    assert.equal(await d.tick(t0 + RETRY_DELAYS_MS[0]! + 1000), 1);
    assert.equal(await d.tick(t0 + RETRY_DELAYS_MS[0]! + RETRY_DELAYS_MS[1]! + 5000), 1);
    await d.stop();
    assert.equal(rx.got.length, 3);
    assert.equal(new Set(rx.got.map((g) => g.headers['webhook-id'])).size, 1, 'one message id across retries');
    const log = await admin(t, s, 'GET', '/api/admin/webhooks/deliveries');
    const delivery = log.body.deliveries[0];
    assert.equal(delivery.status, 'delivered');
    assert.deepEqual(delivery.log.map((a: { statusCode: number }) => a.statusCode).sort(), [200, 500, 503]);
    const again = await admin(t, s, 'POST', `/api/admin/webhooks/deliveries/${delivery.id}/redeliver`);
    assert.equal(again.status, 200);
    const d2 = new WebhookDispatcher({ db: t.deps.database.db, logger: silent, allowPrivate: true });
    assert.equal(await d2.tick(), 1);
    await d2.stop();
    assert.equal(rx.got.length, 4);
    rx.server.close();
  });

  test('retries span more than 24 hours', () => {
    const total = RETRY_DELAYS_MS.reduce((a, b) => a + b, 0);
    assert.ok(total > 24 * 3600_000, `${total} ms`);
    assert.equal(MAX_ATTEMPTS, RETRY_DELAYS_MS.length + 1);
  });

  test('only the lease holder dispatches', async () => {
    const rx = await webhookReceiver([]);
    const s = await signIn(t);
    await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url, events: ['receipt.refunded'] });
    const a = new WebhookDispatcher({ db: t.deps.database.db, logger: silent, allowPrivate: true, leaseTtlMs: 60_000 });
    const b = new WebhookDispatcher({ db: t.deps.database.db, logger: silent, allowPrivate: true, leaseTtlMs: 60_000 });
    await a.tick();
    await fullyRefunded(s, 'wh-3');
    assert.equal(await b.tick(), 0, 'b is not leader');
    assert.equal(b.isLeader, false);
    assert.equal(await a.tick(), 1);
    await a.stop();
    assert.equal(await b.tick(), 0, 'nothing left to send');
    assert.equal(b.isLeader, true, 'b takes over once a releases');
    await b.stop();
    assert.equal(rx.got.length, 1);
    rx.server.close();
  });

  test('at delivery time a private target is refused unless allowed', async () => {
    const rx = await webhookReceiver([]);
    const s = await signIn(t);
    await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url, events: ['receipt.refunded'] });
    // A name that resolves to loopback is caught by the connect-time lookup, not just literals.
    await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url.replace('127.0.0.1', 'localhost'), events: ['receipt.refunded'] });
    await fullyRefunded(s, 'wh-4');
    const d = new WebhookDispatcher({ db: t.deps.database.db, logger: silent, allowPrivate: false });
    assert.equal(await d.tick(), 2);
    await d.stop();
    assert.equal(rx.got.length, 0, 'the loopback receiver was never called');
    const log = await admin(t, s, 'GET', '/api/admin/webhooks/deliveries');
    assert.equal(log.body.deliveries.length, 2);
    for (const delivery of log.body.deliveries) {
      assert.match(delivery.lastError, /private address/);
      assert.equal(delivery.status, 'pending');
    }
    rx.server.close();
  });
});

describe('Send test event: POST /api/admin/webhooks/:id/test', () => {
  test('needs the session and its CSRF token', async () => {
    const s = await signIn(t);
    const reg = await admin(t, s, 'POST', '/api/admin/webhooks', { url: 'http://127.0.0.1:9/hooks' });
    const url = `/api/admin/webhooks/${reg.body.id}/test`;
    assert.equal((await t.call(null, 'POST', url)).status, 401);
    const key = await t.key(s.wallet);
    assert.equal((await t.call(key, 'POST', url)).status, 401, 'a subscription key is not a session');
    const noCsrf = await t.call(null, 'POST', url, undefined, { cookie: s.cookie, origin: 'http://pay.test' });
    assert.equal(noCsrf.status, 403);
    const log = await admin(t, s, 'GET', '/api/admin/webhooks/deliveries');
    assert.deepEqual(log.body.deliveries, [], 'nothing was queued by the refused calls');
  });

  test("another merchant's endpoint, a deleted one and an unknown id are 404", async () => {
    const owner = await signIn(t);
    const other = await signIn(t);
    const reg = await admin(t, owner, 'POST', '/api/admin/webhooks', { url: 'http://127.0.0.1:9/hooks' });
    const theirs = await admin(t, other, 'POST', `/api/admin/webhooks/${reg.body.id}/test`);
    assert.equal(theirs.status, 404);
    assert.equal(theirs.body.error, 'not_found');
    assert.equal((await admin(t, owner, 'POST', '/api/admin/webhooks/wh_nope/test')).status, 404);
    assert.equal((await admin(t, owner, 'DELETE', `/api/admin/webhooks/${reg.body.id}`)).status, 200);
    assert.equal((await admin(t, owner, 'POST', `/api/admin/webhooks/${reg.body.id}/test`)).status, 404);
  });

  test('one signed webhook.test reaches that endpoint only, whatever it subscribes to', async () => {
    const rx = await webhookReceiver([]);
    const bystander = await webhookReceiver([]);
    const s = await signIn(t);
    const reg = await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url, events: ['receipt.refunded'] });
    await admin(t, s, 'POST', '/api/admin/webhooks', { url: bystander.url });
    const sent = await admin(t, s, 'POST', `/api/admin/webhooks/${reg.body.id}/test`);
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    assert.match(sent.body.deliveryId, /^dlv_/);
    const d = new WebhookDispatcher({ db: t.deps.database.db, logger: silent, allowPrivate: true });
    await d.tick();
    await d.stop();
    assert.equal(rx.got.length, 1);
    assert.equal(bystander.got.length, 0, 'no other endpoint hears a test event');
    const { headers, body } = rx.got[0]!;
    const sig = { id: String(headers['webhook-id']), timestamp: String(headers['webhook-timestamp']), signature: String(headers['webhook-signature']) };
    assert.ok(verifyWebhook(reg.body.secret, sig, body), 'signed with the endpoint secret');
    const payload = JSON.parse(body);
    assert.equal(payload.type, 'webhook.test');
    assert.equal(payload.data.endpointId, reg.body.id);
    const log = await admin(t, s, 'GET', '/api/admin/webhooks/deliveries');
    const delivery = log.body.deliveries.find((x: { id: string }) => x.id === sent.body.deliveryId);
    assert.equal(delivery.status, 'delivered');
    assert.equal(delivery.type, 'webhook.test');
    assert.equal(delivery.receiptId, null);
    rx.server.close();
    bystander.server.close();
  });

  test('webhook.test cannot be subscribed to', async () => {
    const s = await signIn(t);
    const res = await admin(t, s, 'POST', '/api/admin/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['webhook.test'] });
    assert.equal(res.status, 400);
    assert.doesNotMatch(res.body.message.split('; events:')[1], /webhook\.test/, 'not among the events listed');
  });

  test('tried once: a refusing endpoint fails it at once, with the reason in words; one test at a time', async () => {
    const closed = await webhookReceiver([]);
    const deadUrl = closed.url;
    await new Promise((r) => closed.server.close(r));
    const s = await signIn(t);
    const reg = await admin(t, s, 'POST', '/api/admin/webhooks', { url: deadUrl });
    const first = await admin(t, s, 'POST', `/api/admin/webhooks/${reg.body.id}/test`);
    assert.equal(first.status, 202);
    const busy = await admin(t, s, 'POST', `/api/admin/webhooks/${reg.body.id}/test`);
    assert.equal(busy.status, 409, 'a second test while the first is still queued');
    const d = new WebhookDispatcher({ db: t.deps.database.db, logger: silent, allowPrivate: true });
    await d.tick();
    // Past the first retry's time: a test event is not among what is due.
    await d.tick(Date.now() + RETRY_DELAYS_MS[0]! + 1000);
    await d.stop();
    const log = await admin(t, s, 'GET', '/api/admin/webhooks/deliveries');
    const delivery = log.body.deliveries.find((x: { id: string }) => x.id === first.body.deliveryId);
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempts, 1);
    assert.equal(delivery.lastErrorCode, 'ECONNREFUSED');
    assert.match(delivery.lastErrorText, /^Connection refused/);
    assert.match(delivery.lastError, /^ECONNREFUSED: /, 'the raw error stays available');
    assert.equal(delivery.log[0].errorCode, 'ECONNREFUSED');
    assert.match(delivery.log[0].errorText, /^Connection refused/);
    assert.equal((await admin(t, s, 'POST', `/api/admin/webhooks/${reg.body.id}/test`)).status, 202, 'the next test once the first has its result');
  });

  test('the same Idempotency-Key answers the same delivery and queues nothing more', async () => {
    const s = await signIn(t);
    const reg = await admin(t, s, 'POST', '/api/admin/webhooks', { url: 'http://127.0.0.1:9/hooks' });
    const key = { 'idempotency-key': `test-${reg.body.id}` };
    const a = await admin(t, s, 'POST', `/api/admin/webhooks/${reg.body.id}/test`, undefined, key);
    const b = await admin(t, s, 'POST', `/api/admin/webhooks/${reg.body.id}/test`, undefined, key);
    assert.equal(a.status, 202);
    assert.equal(b.status, 202);
    assert.equal(b.body.deliveryId, a.body.deliveryId);
    const log = await admin(t, s, 'GET', '/api/admin/webhooks/deliveries');
    assert.equal(log.body.deliveries.length, 1);
  });
});

describe('deliveries name their receipt', () => {
  test('receiptId comes from the event payload', async () => {
    const rx = await webhookReceiver([]);
    const s = await signIn(t);
    await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url, events: ['receipt.refunded'] });
    await fullyRefunded(s, 'wh-receipt-7');
    const log = await admin(t, s, 'GET', '/api/admin/webhooks/deliveries');
    assert.equal(log.status, 200);
    assert.equal(log.body.deliveries.length, 1);
    assert.equal(log.body.deliveries[0].receiptId, 'wh-receipt-7');
    assert.equal(log.body.deliveries[0].log.length, 0);
    rx.server.close();
  });
});

describe('a merchant with much due cannot push another out of a pass', () => {
  test('due deliveries come round-robin by merchant, then endpoint, each endpoint bounded', async () => {
    const busy = await signIn(t);
    const quiet = await signIn(t);
    const busyHooks: string[] = [];
    for (let i = 0; i < 4; i++) {
      busyHooks.push((await admin(t, busy, 'POST', '/api/admin/webhooks', { url: `http://127.0.0.1:9/busy-${i}`, events: ['receipt.refunded'] })).body.id);
    }
    const quietHook = (await admin(t, quiet, 'POST', '/api/admin/webhooks', { url: 'http://127.0.0.1:9/quiet', events: ['receipt.refunded'] })).body.id;
    for (let i = 0; i < 5; i++) await fullyRefunded(busy, `rr-busy-${i}`);
    await fullyRefunded(quiet, 'rr-quiet');
    // Other tests' merchants may have deliveries due too: a pass as long as there are merchants
    // with something due holds exactly one of each.
    const wide = await dueDeliveries(t.deps.database.db, Date.now(), { limit: 1000, perEndpoint: 2, perMerchant: 10 });
    const merchants = new Set(wide.map((d) => d.wallet));
    const due = await dueDeliveries(t.deps.database.db, Date.now(), { limit: merchants.size, perEndpoint: 2, perMerchant: 10 });
    assert.deepEqual(new Set(due.map((d) => d.wallet)), merchants, 'one delivery of each merchant');
    assert.ok(due.some((d) => d.endpointId === quietHook), 'the quiet merchant is in the pass despite 20 due for the busy one');
    const perEndpoint = new Map<string, number>();
    for (const d of wide) perEndpoint.set(d.endpointId, (perEndpoint.get(d.endpointId) ?? 0) + 1);
    for (const id of busyHooks) assert.equal(perEndpoint.get(id), 2, 'at most 2 per endpoint in one pass');
    const capped = await dueDeliveries(t.deps.database.db, Date.now(), { limit: 100, perEndpoint: 2, perMerchant: 3, skipEndpoints: [busyHooks[0]!] });
    const busyCount = capped.filter((d) => d.wallet === busy.wallet);
    assert.equal(busyCount.length, 3, 'at most perMerchant of one merchant');
    assert.ok(busyCount.every((d) => d.endpointId !== busyHooks[0]), 'a skipped endpoint is left out');
    assert.deepEqual(new Set(busyCount.map((d) => d.endpointId)).size, 3, 'one merchant\'s share is spread over its endpoints');
    // Leave nothing due for the other tests' dispatchers.
    await t.deps.database.db.update(webhookDeliveries).set({ status: 'failed' }).where(inArray(webhookDeliveries.wallet, [busy.wallet, quiet.wallet]));
  });
});

describe('loopback targets on the dev chain', () => {
  let dev: TestApp;
  before(async () => {
    // CHAIN is unset: the dev chain, the default. WEBHOOK_ALLOW_PRIVATE is unset too.
    dev = await startTestApp({});
  });
  after(async () => {
    await dev.close();
  });

  test('http://localhost and 127.0.0.1 are accepted and delivered to; private ranges are still refused', async () => {
    const rx = await webhookReceiver([]);
    const s = await signIn(dev);
    const list = await admin(dev, s, 'GET', '/api/admin/webhooks');
    assert.deepEqual(list.body.targets, { loopback: true, private: false });
    const byIp = await admin(dev, s, 'POST', '/api/admin/webhooks', { url: rx.url });
    assert.equal(byIp.status, 201, JSON.stringify(byIp.body));
    const byName = await admin(dev, s, 'POST', '/api/admin/webhooks', { url: rx.url.replace('127.0.0.1', 'localhost') });
    assert.equal(byName.status, 201, JSON.stringify(byName.body));
    for (const url of ['https://10.1.2.3/x', 'http://192.168.1.10/x', 'https://169.254.169.254/latest', 'http://93.184.215.14/x']) {
      const res = await admin(dev, s, 'POST', '/api/admin/webhooks', { url });
      assert.equal(res.status, 400, url);
    }
    const sent = await admin(dev, s, 'POST', `/api/admin/webhooks/${byName.body.id}/test`);
    assert.equal(sent.status, 202);
    assert.equal(await dev.deps.webhooks.tick(), 1, 'the dispatcher built from this configuration sends to loopback');
    assert.equal(rx.got.length, 1);
    rx.server.close();
  });
});
