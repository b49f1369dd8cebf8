import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from '../src/webhooks/outbox.ts';
import { verifyWebhook } from '../src/webhooks/sign.ts';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';
import { admin, signIn, type Session } from './helpers/session.ts';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP receiver on loopback that answers with the next status from a script. */
async function receiver(statuses: number[]): Promise<{ url: string; got: Received[]; server: Server }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.statusCode = statuses.shift() ?? 200;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hooks`, got, server };
}

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
    const rx = await receiver([]);
    const s = await signIn(t);
    const reg = await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url });
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
    const rx = await receiver([500, 503]);
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
    const rx = await receiver([]);
    const s = await signIn(t);
    await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url });
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
    const rx = await receiver([]);
    const s = await signIn(t);
    await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url });
    // A name that resolves to loopback is caught by the connect-time lookup, not just literals.
    await admin(t, s, 'POST', '/api/admin/webhooks', { url: rx.url.replace('127.0.0.1', 'localhost') });
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
