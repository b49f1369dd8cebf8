/**
 * Issue 12, item 7: one merchant's dead webhook endpoints never delay another merchant's
 * deliveries. The real service in a process of its own (src/main.ts: PGlite and the dev chain, or
 * the PostgreSQL of DATABASE_URL). Merchant A has ten endpoints that accept the connection and
 * never answer; merchant B has one healthy endpoint. B's delivery time is measured with A idle and
 * again while A's deliveries hang; A's attempts must end as timeouts, recorded and retried later,
 * and every event acknowledged to B must reach B's receiver exactly once.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freshPostgresDatabase, randomWallet } from './helpers/app.ts';
import { http, signInOverHttp, startService, stopAllServices, type HttpSession, type Service } from './helpers/service.ts';
import { newAccount } from './helpers/session.ts';
import { until, waitFor } from './helpers/wait.ts';

const SITE = 'http://pay.test';
const DEAD_ENDPOINTS = 10;
/**
 * B's delivery while A's ten endpoints hang must arrive well inside one of A's timeouts (5 s). A
 * real-time bound on purpose: the behaviour under test is that real sockets hanging for real
 * seconds in the service's process do not delay B, so no clock can be injected.
 */
const BOUND_MS = 3_000;

const cleanups: (() => Promise<void> | void)[] = [];

/** A TCP server that accepts every connection and never answers (nor closes). */
async function deadEndpoint(): Promise<{ url: string; connections: () => number; mostAtOnce: () => number; server: NetServer }> {
  const sockets: Socket[] = [];
  let accepted = 0;
  let open = 0;
  let most = 0;
  const server = createNetServer((s) => {
    accepted++;
    most = Math.max(most, ++open);
    sockets.push(s);
    s.on('close', () => open--);
    s.on('error', () => undefined);
    s.resume();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`, connections: () => accepted, mostAtOnce: () => most, server };
}

interface Arrival {
  webhookId: string;
  receiptId: string;
  at: number;
}

/** B's healthy receiver: answers 200 at once and keeps a ledger of what arrived. */
async function healthyEndpoint(): Promise<{ url: string; arrivals: Arrival[]; server: HttpServer }> {
  const arrivals: Arrival[] = [];
  const server = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const payload = JSON.parse(body) as { data?: { receiptId?: string } };
      arrivals.push({ webhookId: String(req.headers['webhook-id']), receiptId: String(payload.data?.receiptId), at: Date.now() });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => void server.close());
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`, arrivals, server };
}

interface Merchant {
  session: HttpSession;
  key: string;
}

describe('webhook delivery isolated per endpoint', { timeout: 240_000 }, () => {
  let svc: Service;
  let a: Merchant;
  let b: Merchant;

  before(async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-isolation-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const fresh = process.env.DATABASE_URL ? await freshPostgresDatabase(process.env.DATABASE_URL) : undefined;
    if (fresh) cleanups.push(() => fresh.drop());
    svc = await startService('isolation', {
      DATA_DIR: dataDir,
      SITE_URL: SITE,
      PLATFORM_RECIPIENT_ADDRESS: '0x000000000000000000000000000000000000beef',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      ...(fresh ? { DATABASE_URL: fresh.url } : {}),
    });
    const merchant = async (): Promise<Merchant> => {
      const session = await signInOverHttp(svc.base, newAccount(), SITE);
      const sub = await http(svc.base, 'POST', '/api/admin/subscriptions', { headers: session.headers, body: { name: 'isolation' } });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      return { session, key: sub.body.primaryKey as string };
    };
    a = await merchant();
    b = await merchant();
  });

  after(async () => {
    await stopAllServices();
    for (const c of cleanups.reverse()) await c();
  });

  let seq = 0;
  /** A receipt and its full refund: the refund's answer acknowledges a receipt.refunded event. */
  async function refundedReceipt(m: Merchant, prefix: string): Promise<{ id: string; ackAt: number }> {
    const id = `${prefix}-${++seq}`;
    const created = await http(svc.base, 'POST', '/api/receipts', { key: m.key, body: { id, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const refund = await http(svc.base, 'POST', '/api/receipts/refund', {
      headers: m.session.headers,
      body: { receiptId: id, wallet: m.session.wallet, buyer: randomWallet(), usd: 2 },
    });
    assert.equal(refund.status, 200, JSON.stringify(refund.body));
    return { id, ackAt: Date.now() };
  }

  test("B's deliveries are not held up by A's ten dead endpoints; A's time out and are retried; B gets each event once", async () => {
    const dead = await Promise.all(Array.from({ length: DEAD_ENDPOINTS }, () => deadEndpoint()));
    const healthy = await healthyEndpoint();
    for (const d of dead) {
      const reg = await http(svc.base, 'POST', '/api/admin/webhooks', { headers: a.session.headers, body: { url: d.url, events: ['receipt.refunded'] } });
      assert.equal(reg.status, 201, JSON.stringify(reg.body));
    }
    const regB = await http(svc.base, 'POST', '/api/admin/webhooks', { headers: b.session.headers, body: { url: healthy.url, events: ['receipt.refunded'] } });
    assert.equal(regB.status, 201, JSON.stringify(regB.body));

    const acknowledged: string[] = [];
    /** B's delivery time: from the refund's answer to its arrival at B's receiver. */
    const deliverToB = async (): Promise<number> => {
      const { id, ackAt } = await refundedReceipt(b, 'b');
      acknowledged.push(id);
      const arrival = await waitFor(() => healthy.arrivals.find((x) => x.receiptId === id), 60_000, `receipt ${id} at B's endpoint`);
      return arrival.at - ackAt;
    };

    // With A idle.
    const idle: number[] = [];
    for (let i = 0; i < 5; i++) idle.push(await deliverToB());

    // A's events: ten deliveries each, to endpoints that never answer.
    const aEvents = 3;
    for (let i = 0; i < aEvents; i++) await refundedReceipt(a, 'a');
    await until(() => dead.every((d) => d.connections() >= 1), 30_000, 'every dead endpoint to hold an attempt');
    const loaded: number[] = [];
    for (let i = 0; i < 5; i++) loaded.push(await deliverToB());

    const fmt = (xs: number[]) => `${[...xs].sort((x, y) => x - y).map((x) => `${x} ms`).join(', ')}`;
    console.log(`B's delivery time, A idle: ${fmt(idle)}`);
    console.log(`B's delivery time, A's ${DEAD_ENDPOINTS} endpoints hanging: ${fmt(loaded)}`);
    for (const ms of loaded) assert.ok(ms < BOUND_MS, `B's delivery took ${ms} ms while A's endpoints hung (bound ${BOUND_MS} ms)`);

    // A's attempts end as timeouts, recorded with the reason, and are tried again later.
    type Attempt = { at: number; statusCode: number | null; errorCode: string | null; errorText: string | null };
    type Delivery = { status: string; attempts: number; nextAttemptAt: number; log: Attempt[] };
    const aDeliveries = async () =>
      (await http(svc.base, 'GET', '/api/admin/webhooks/deliveries', { headers: a.session.headers })).body.deliveries as Delivery[];
    const firstRound = await waitFor(
      async () => {
        const list = await aDeliveries();
        return list.filter((d) => d.attempts >= 1).length >= DEAD_ENDPOINTS ? list : undefined;
      },
      30_000,
      "A's first attempts to be recorded",
    );
    assert.equal(firstRound.length, DEAD_ENDPOINTS * aEvents);
    for (const d of firstRound.filter((x) => x.attempts >= 1)) {
      const last = d.log[0]!;
      assert.equal(last.statusCode, null);
      assert.equal(last.errorCode, 'TIMEOUT');
      assert.equal(last.errorText, 'Timed out after 5 s');
      assert.equal(d.status, 'pending', 'a timed-out delivery is retried');
      assert.ok(d.nextAttemptAt > last.at, 'its next attempt is later');
    }
    const retried = await waitFor(
      async () => {
        const list = await aDeliveries();
        return list.some((d) => d.attempts >= 2) ? list : undefined;
      },
      60_000,
      "A's deliveries to be tried again",
    );
    const again = retried.find((d) => d.attempts >= 2)!;
    assert.ok(again.log.every((x) => x.errorCode === 'TIMEOUT'), 'each attempt logged, each a timeout');
    assert.ok(retried.every((d) => d.status === 'pending'), 'none given up');
    const connections = dead.reduce((n, d) => n + d.connections(), 0);
    const most = Math.max(...dead.map((d) => d.mostAtOnce()));
    console.log(`A: ${connections} connections to its dead endpoints, at most ${most} open at once to one endpoint`);
    assert.ok(most <= 2, `an endpoint had ${most} attempts in flight at once`);

    // Exactly once: every acknowledged event reached B once, and nothing else did.
    const bDelivered = async () => {
      const list = (await http(svc.base, 'GET', '/api/admin/webhooks/deliveries', { headers: b.session.headers })).body.deliveries as Delivery[];
      return list.length === acknowledged.length && list.every((d) => d.status === 'delivered') ? list : undefined;
    };
    await waitFor(bDelivered, 30_000, "B's deliveries all recorded as delivered");
    const perReceipt = new Map<string, number>();
    for (const x of healthy.arrivals) perReceipt.set(x.receiptId, (perReceipt.get(x.receiptId) ?? 0) + 1);
    assert.deepEqual([...perReceipt.keys()].sort(), [...acknowledged].sort(), 'B received exactly the acknowledged events');
    for (const [id, n] of perReceipt) assert.equal(n, 1, `${id} reached B ${n} times`);
    assert.equal(new Set(healthy.arrivals.map((x) => x.webhookId)).size, healthy.arrivals.length, 'no webhook id twice');
  });
});
