/**
 * Exactly once, under the faults the issue reproduced (DESIGN.md "Writes, retries and
 * instances"), on a PostgreSQL cluster of the test's own (helpers/private-postgres.ts) with two
 * real service processes:
 *   - a commit that hangs past the query timeout (a synchronous standby that never answers):
 *     the order is answered 500 failed, never a 503, and its retry with the same key finds it;
 *     journaled copies of writes that did land change nothing at replay;
 *   - the same hung commit for a terminal sale, an inventory change and a refund (the admin app's
 *     writes and the key's): 500 failed, and each retry answers the one write that landed;
 *   - two instances replaying in both orders: statuses journaled on one instance for receipts
 *     journaled on the other wait for them, and none is lost;
 *   - a create retried on the other instance during an outage answers the same payment URL, and
 *     a create of the same id with another body is shown to the merchant, never dropped silently;
 *   - a journal that cannot be written (a real ENOSPC on a tiny tmpfs) answers 503, and nothing
 *     it refused appears later.
 * Every test keeps a ledger of what was acknowledged and checks the database against it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { inventoryItems, receipts, receiptStatusHistory, refunds, rejectedWrites, webhookEvents, writeIds } from '../src/db/schema.ts';
import { storeSplitConfig } from '../src/domain/splits.ts';
import { createSubscription } from '../src/gateway/subscriptions.ts';
import { randomWallet } from './helpers/app.ts';
import { keyedMerchant } from './helpers/merchant.ts';
import { postgresBinDir, usePrivatePostgres, type PrivateCluster } from './helpers/private-postgres.ts';
import { http, signInOverHttp, startService, TEST_EDGE_SECRET, type HttpRes, type HttpSession, type Service } from './helpers/service.ts';
import { newAccount } from './helpers/session.ts';
import { until } from './helpers/wait.ts';
import { receiptBody } from './helpers/write-ledger.ts';

const bin = postgresBinDir();
const skip = bin === undefined ? 'initdb/pg_ctl not found; install PostgreSQL to run the exactly-once fault tests' : false;
const SITE = 'http://pay.test';
const PLATFORM = '0x000000000000000000000000000000000000beef';
const QUERY_TIMEOUT_MS = 1500;

let cluster: PrivateCluster;
const dirs: string[] = [];
const figures: string[] = [];

function dataDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'splitline-once-'));
  dirs.push(d);
  return d;
}

function serviceEnv(dir: string): Record<string, string> {
  return {
    DATA_DIR: dir,
    // /healthz shows its details (database, journal) to requests carrying it, as http() does.
    EDGE_SECRET: TEST_EDGE_SECRET,
    DATABASE_URL: cluster.pg.url,
    SITE_URL: SITE,
    PLATFORM_RECIPIENT_ADDRESS: PLATFORM,
    // Instances behind one load balancer share the secret that payment tokens are derived from.
    JWT_SECRET: `exactly-once-test-${'s'.repeat(32)}`,
    DB_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    LOG_LEVEL: 'warn',
  };
}

const merchant = () => keyedMerchant(cluster.admin.db, PLATFORM);

/**
 * A merchant who is also signed in to the admin app on `svc` (terminal sales and refunds take a
 * session): a real account, a split written straight into the database, and a key for the same wallet.
 */
async function signedInMerchant(svc: Service): Promise<{ wallet: string; key: string; session: HttpSession }> {
  const session = await signInOverHttp(svc.base, newAccount(), SITE);
  await storeSplitConfig(cluster.admin.db, session.wallet, {
    address: null,
    recipients: [
      { address: session.wallet, sharesBps: 9950 },
      { address: PLATFORM, sharesBps: 50 },
    ],
  });
  const key = (await createSubscription(cluster.admin.db, { wallet: session.wallet, rateLimitPerMinute: 1_000_000 })).primaryKey;
  return { wallet: session.wallet, key, session };
}

/** Every commit waits for a synchronous standby that does not exist (on) or completes (off); reads still answer. */
async function hangCommits(on: boolean): Promise<void> {
  await cluster.admin.db.execute(sql.raw(on ? `alter system set synchronous_standby_names = 'nobody'` : 'alter system reset synchronous_standby_names'));
  await cluster.admin.db.execute(sql`select pg_reload_conf()`);
}

function assertOutcomeUnknown(res: HttpRes, what: string): void {
  assert.equal(res.status, 500, `${what}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.error, 'failed', what);
  assert.match(res.body.message, /may or may not be stored/, what);
  assert.equal(res.headers.get('retry-after'), null, `${what}: no promise that nothing happened`);
}

/** Each instance resolves the key once while the database answers, as a live client's would be. */
async function seeKey(key: string, ...services: Service[]): Promise<void> {
  for (const svc of services) assert.equal((await http(svc.base, 'GET', '/api/receipts?limit=1', { key })).status, 200);
}

async function storedReceipts(wallet: string) {
  return cluster.admin.db.select().from(receipts).where(eq(receipts.wallet, wallet));
}

/** Tracking history counts of a receipt: "status" → count. */
async function trackingCounts(wallet: string, receiptId: string): Promise<Record<string, number>> {
  const rows = await cluster.admin.db
    .select()
    .from(receiptStatusHistory)
    .where(and(eq(receiptStatusHistory.wallet, wallet), eq(receiptStatusHistory.receiptId, receiptId), eq(receiptStatusHistory.source, 'tracking')));
  return Object.fromEntries(rows.map((r) => [r.status, r.count]));
}

const drained = (svc: Service) => async () => {
  const h = await http(svc.base, 'GET', '/healthz');
  return h.body.database === 'up' && h.body.journalPending === 0;
};

describe('exactly once under faults', { skip, timeout: 400_000 }, () => {
  cluster = usePrivatePostgres('splitline-once-');
  // The cluster's own after stops the services first; then the instances' data directories go.
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('a commit that hangs past the query timeout: 500 failed, never 503, and the retry finds the one order', { timeout: 120_000 }, async () => {
    const m = await merchant();
    const svc = await startService('hang', serviceEnv(dataDir()));
    assert.equal((await http(svc.base, 'POST', '/api/inventory', { key: m.key, body: { sku: 'tea', name: 'Tea', priceUsd: 3, stockQty: 10 } })).status, 201);
    // Unlimited: its orders go without a transaction, claim and receipt in one statement (src/domain/orders.ts).
    assert.equal((await http(svc.base, 'POST', '/api/inventory', { key: m.key, body: { sku: 'cake', name: 'Cake', priceUsd: 4, stockQty: -1 } })).status, 201);
    assert.equal((await http(svc.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody('seen') })).status, 201);

    // Every commit now waits for a synchronous standby that does not exist; reads still answer.
    await hangCommits(true);
    const orderKey = { 'idempotency-key': `order-${m.wallet}` };
    const order = { items: [{ sku: 'tea', qty: 2 }] };
    const t0 = Date.now();
    const hung = await http(svc.base, 'POST', '/api/orders', { key: m.key, body: order, headers: orderKey });
    const hungMs = Date.now() - t0;
    assertOutcomeUnknown(hung, 'order');
    // A real bound on purpose: the answer comes one query timeout after the COMMIT, not two (the
    // ROLLBACK drizzle sends after a failed COMMIT must not wait behind it for a timeout of its own).
    assert.ok(hungMs < 2 * QUERY_TIMEOUT_MS, `answered ${hungMs} ms after the order was sent; the query timeout is ${QUERY_TIMEOUT_MS} ms`);

    const cakeKey = { 'idempotency-key': `cake-${m.wallet}` };
    const cake = { items: [{ sku: 'cake', qty: 1 }] };
    const hungCake = await http(svc.base, 'POST', '/api/orders', { key: m.key, body: cake, headers: cakeKey });
    assertOutcomeUnknown(hungCake, 'order');

    // The journaled routes acknowledge: their copies carry the same write ids.
    const created = await http(svc.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody('during-hang'), headers: { 'idempotency-key': 'r-hang' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const status = await http(svc.base, 'POST', '/api/receipts/status', {
      body: { receiptId: 'seen', wallet: m.wallet, status: 'link_opened' },
      headers: { 'idempotency-key': 's-hang' },
    });
    assert.equal(status.status, 200);
    // A stranger's status for a made-up receipt answers the same, and nothing is journaled for it.
    const madeUp = await http(svc.base, 'POST', '/api/receipts/status', {
      body: { receiptId: 'made-up-during-hang', wallet: m.wallet, status: 'link_opened' },
      headers: { 'idempotency-key': 's-hang-made-up' },
    });
    assert.deepEqual({ status: madeUp.status, body: madeUp.body }, { status: 200, body: status.body });

    // The standby question goes away: the waiting commits complete.
    await hangCommits(false);

    const retry = await http(svc.base, 'POST', '/api/orders', { key: m.key, body: order, headers: orderKey });
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    const cakeRetry = await http(svc.base, 'POST', '/api/orders', { key: m.key, body: cake, headers: cakeKey });
    assert.equal(cakeRetry.status, 200, JSON.stringify(cakeRetry.body));
    await until(drained(svc), 30_000, 'the journal to drain');

    // The ledger: one order (the hung commit did land), the receipt once with its URL, the status once.
    const rows = await storedReceipts(m.wallet);
    const orders = rows.filter((r) => r.source === 'order');
    assert.deepEqual(orders.map((r) => r.id).sort(), [retry.body.receipt.receiptId, cakeRetry.body.receipt.receiptId].sort(), 'one order per key, however many attempts');
    const [item] = await cluster.admin.db.select().from(inventoryItems).where(and(eq(inventoryItems.wallet, m.wallet), eq(inventoryItems.sku, 'tea')));
    assert.equal(item?.stockQty, 8, 'stock taken once');
    const hangRow = rows.find((r) => r.id === 'during-hang');
    assert.ok(hangRow);
    assert.equal(created.body.paymentUrl, `${SITE}/pay/during-hang?t=${hangRow.payToken}`);
    assert.deepEqual(await trackingCounts(m.wallet, 'seen'), { link_opened: 1 });
    assert.deepEqual(await trackingCounts(m.wallet, 'made-up-during-hang'), {});
    assert.deepEqual(await cluster.admin.db.select().from(rejectedWrites).where(eq(rejectedWrites.wallet, m.wallet)), [], 'no rejected write planted');
    figures.push(`hung commit answered 500 failed after ${hungMs} ms (query timeout ${QUERY_TIMEOUT_MS} ms); 1 order per key (with and without a transaction), 1 receipt, 1 status stored`);
    await svc.stop();
  });

  test('a terminal sale, an inventory change and a refund whose commits hang: 500 failed, and each retry finds its one write', { timeout: 120_000 }, async () => {
    const svc = await startService('hang-admin', serviceEnv(dataDir()));
    const m = await signedInMerchant(svc);
    assert.equal((await http(svc.base, 'POST', '/api/inventory', { key: m.key, body: { sku: 'tea', name: 'Tea', priceUsd: 3, stockQty: 10 } })).status, 201);
    // A receipt to refund, paid as far as the database knows (refunds are recorded without the chain).
    assert.equal((await http(svc.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody('to-refund') })).status, 201);
    await cluster.admin.db.update(receipts).set({ status: 'completed' }).where(and(eq(receipts.wallet, m.wallet), eq(receipts.id, 'to-refund')));

    const buyer = randomWallet();
    const writes = {
      terminal: { url: '/api/receipts/terminal', auth: { headers: m.session.headers }, body: { amountUsd: 12.5, label: 'Till' } },
      inventory: { url: '/api/inventory', auth: { key: m.key }, body: { sku: 'tea', name: 'Tea', priceUsd: 3.5, stockQty: 25 } },
      // Two of five dollars: a second refund would still fit under the total, so nothing but the write id stops one.
      refund: { url: '/api/receipts/refund', auth: { headers: m.session.headers }, body: { receiptId: 'to-refund', wallet: m.wallet, buyer, usd: 2 } },
    };
    const send = (w: (typeof writes)[keyof typeof writes], idempotencyKey: string) =>
      http(svc.base, 'POST', w.url, {
        ...('key' in w.auth ? { key: w.auth.key } : {}),
        body: w.body,
        headers: { ...('headers' in w.auth ? w.auth.headers : {}), 'idempotency-key': idempotencyKey },
      });

    await hangCommits(true);
    const hungMs: Record<string, number> = {};
    for (const [name, w] of Object.entries(writes)) {
      const t0 = Date.now();
      assertOutcomeUnknown(await send(w, `${name}-${m.wallet}`), name);
      hungMs[name] = Date.now() - t0;
    }
    await hangCommits(false);

    // The hung commits land once the standby question goes away, before any retry is sent.
    const sales = async () => (await storedReceipts(m.wallet)).filter((r) => r.source === 'terminal');
    const made = () => cluster.admin.db.select().from(refunds).where(eq(refunds.wallet, m.wallet));
    const stockOf = async () =>
      (await cluster.admin.db.select().from(inventoryItems).where(and(eq(inventoryItems.wallet, m.wallet), eq(inventoryItems.sku, 'tea'))))[0]?.stockQty;
    await until(
      async () => (await sales()).length === 1 && (await made()).length === 1 && (await stockOf()) === 25,
      30_000,
      'the three hung writes to land',
    );
    const [sale] = await sales();
    const [landed] = await made();
    // Stock moves on (an order takes 3): a retry that applied the change again would put it back to 25.
    const order = await http(svc.base, 'POST', '/api/orders', { key: m.key, body: { items: [{ sku: 'tea', qty: 3 }] } });
    assert.equal(order.status, 200, JSON.stringify(order.body));

    const terminal = await send(writes.terminal, `terminal-${m.wallet}`);
    assert.equal(terminal.status, 200, JSON.stringify(terminal.body));
    const inventory = await send(writes.inventory, `inventory-${m.wallet}`);
    assert.equal(inventory.status, 200, JSON.stringify(inventory.body));
    const refund = await send(writes.refund, `refund-${m.wallet}`);
    assert.equal(refund.status, 200, JSON.stringify(refund.body));

    // The ledger: each retry answered the write its hung attempt made, and nothing was made twice.
    assert.equal(terminal.body.receipt.receiptId, sale!.id, 'the retry answers the sale the hung attempt made');
    assert.equal(terminal.body.receipt.paymentUrl, `${SITE}/pay/${sale!.id}?t=${sale!.payToken}`);
    assert.equal(sale!.totalCents, 1250n);
    assert.equal((await sales()).length, 1, 'one terminal receipt, however many attempts');
    assert.equal(await stockOf(), 22, 'the change applied once, and the order after it kept');
    assert.equal(inventory.body.item.priceUsd, 3.5);
    assert.equal(inventory.body.item.stockQty, 22);
    assert.equal(refund.body.refundId, landed!.id, 'the retry answers the refund the hung attempt made');
    assert.equal(landed!.amountCents, 200n);
    assert.equal((await made()).length, 1, 'one refund, however many attempts');
    assert.equal(refund.body.refundedUsd, 2);
    const history = await cluster.admin.db
      .select()
      .from(receiptStatusHistory)
      .where(and(eq(receiptStatusHistory.wallet, m.wallet), eq(receiptStatusHistory.receiptId, 'to-refund'), eq(receiptStatusHistory.status, 'refund_partial')));
    assert.equal(history.length, 1, 'the refund logged once');
    // Key-derived write ids only: the keyless set-up writes and the order carry fresh ones.
    const keyed = await cluster.admin.db
      .select()
      .from(writeIds)
      .where(and(eq(writeIds.wallet, m.wallet), sql`${writeIds.writeId} like 'idem:%'`));
    assert.deepEqual(
      keyed.map((w) => `${w.kind} ${w.ref}`).sort(),
      ['inventory tea', `refund ${landed!.id}`, `terminal ${sale!.id}`],
      'one write id per key, naming what its write made',
    );
    const ms = Object.entries(hungMs).map(([k, v]) => `${k} ${v} ms`).join(', ');
    figures.push(`hung commits (${ms}) answered 500 failed; retries found 1 terminal receipt, 1 inventory change, 1 refund`);
    await svc.stop();
  });

  test('two instances replaying in both orders: a status for the other instance’s receipt is refused 503, and none acknowledged is lost', { timeout: 150_000 }, async () => {
    const m = await merchant();
    const a = await startService('a', serviceEnv(dataDir()));
    const b = await startService('b', serviceEnv(dataDir()));
    await seeKey(m.key, a, b);
    await cluster.pg.stop();
    const acked = { receipts: new Map<string, string>(), statuses: new Map<string, number>() };
    const refused: { id: string; status: string }[] = [];
    const TRACKING = ['link_opened', 'buyer_logged_in', 'checkout_initialized'] as const;
    // Five receipts journaled on A, five on B. A tracking status needs no credential, so an
    // instance journals one only for a receipt its own journal holds (DESIGN.md "Security
    // settings"): on the other instance it is 503 with Retry-After, nothing written.
    for (let i = 0; i < 10; i++) {
      const [creator, other] = i < 5 ? [a, b] : [b, a];
      const id = `x-${i}`;
      const res = await http(creator.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody(id) });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.degraded, true);
      acked.receipts.set(id, res.body.paymentUrl);
      for (const s of TRACKING.slice(0, 2 + (i % 2))) {
        const elsewhere = await http(other.base, 'POST', '/api/receipts/status', { body: { receiptId: id, wallet: m.wallet, status: s } });
        assert.equal(elsewhere.status, 503, JSON.stringify(elsewhere.body));
        assert.equal(elsewhere.body.error, 'database_unavailable');
        refused.push({ id, status: s });
        const st = await http(creator.base, 'POST', '/api/receipts/status', { body: { receiptId: id, wallet: m.wallet, status: s } });
        assert.equal(st.status, 200);
        assert.equal(st.body.degraded, true);
        acked.statuses.set(`${id} ${s}`, 1);
      }
    }
    // A is paused while B replays first: B holds nothing that waits for A.
    process.kill(a.pid, 'SIGSTOP');
    const t0 = Date.now();
    try {
      await cluster.pg.start();
      await until(drained(b), 30_000, "B's journal to drain while A is paused");
      assert.equal((await storedReceipts(m.wallet)).length, 5);
    } finally {
      process.kill(a.pid, 'SIGCONT');
    }
    await until(drained(a), 30_000, "A's journal to drain");
    const drainMs = Date.now() - t0;
    // The refused statuses, sent again as their 503 asked: stored now, once more each.
    for (const { id, status } of refused) {
      const again = await http(b.base, 'POST', '/api/receipts/status', { body: { receiptId: id, wallet: m.wallet, status } });
      assert.equal(again.status, 200);
      assert.equal(again.body.degraded, undefined);
      acked.statuses.set(`${id} ${status}`, (acked.statuses.get(`${id} ${status}`) ?? 0) + 1);
    }

    const rows = await storedReceipts(m.wallet);
    assert.equal(rows.length, 10);
    for (const [id, url] of acked.receipts) {
      const row = rows.find((r) => r.id === id);
      assert.equal(url, `${SITE}/pay/${id}?t=${row?.payToken}`, `${id} keeps its payment URL`);
    }
    let stored = 0;
    for (const id of acked.receipts.keys()) {
      const counts = await trackingCounts(m.wallet, id);
      for (const [k, v] of Object.entries(counts)) {
        assert.equal(acked.statuses.get(`${id} ${k}`), v, `${id} ${k} stored ${v} times`);
        stored += v;
      }
    }
    assert.equal(stored, 2 * refused.length, 'every acknowledged status stored exactly once, the refused ones only when sent again');
    assert.deepEqual(await cluster.admin.db.select().from(rejectedWrites).where(eq(rejectedWrites.wallet, m.wallet)), []);
    figures.push(
      `two instances: 10 receipts and ${refused.length} statuses acknowledged during the outage, all stored once; ${refused.length} statuses sent to the ` +
        `other instance refused 503 and stored when sent again; both journals drained ${drainMs} ms after PostgreSQL came back`,
    );
    await Promise.all([a.stop(), b.stop()]);
  });

  test('a create retried on the other instance during an outage answers the same payment URL; a conflicting one is shown to the merchant', { timeout: 120_000 }, async () => {
    const m = await merchant();
    const a = await startService('a2', serviceEnv(dataDir()));
    const b = await startService('b2', serviceEnv(dataDir()));
    await seeKey(m.key, a, b);
    await cluster.pg.stop();
    const first = await http(a.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody('retried'), headers: { 'idempotency-key': 'k-retried' } });
    const retried = await http(b.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody('retried'), headers: { 'idempotency-key': 'k-retried' } });
    assert.equal(first.status, 201);
    assert.equal(retried.status, 201);
    assert.equal(retried.body.paymentUrl, first.body.paymentUrl, 'the same URL from either instance');
    // The instance that holds an id knows a different body is a conflict...
    assert.equal((await http(b.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody('retried', 999) })).status, 409);
    // ...but an id held only by the other instance cannot be checked during the outage.
    assert.equal((await http(a.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody('clash') })).status, 201);
    const other = await http(b.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody('clash', 999) });
    assert.equal(other.status, 201);
    await cluster.pg.start();
    await until(drained(a), 30_000, "A's journal to drain");
    await until(drained(b), 30_000, "B's journal to drain");

    const all = await storedReceipts(m.wallet);
    // Whichever instance replays first keeps the id; the other body is rejected.
    const clash = all.filter((r) => r.id === 'clash');
    assert.equal(clash.length, 1);
    assert.ok(clash[0]!.totalCents === 500n || clash[0]!.totalCents === 1998n);
    const rows = all.filter((r) => r.id === 'retried');
    assert.equal(rows.length, 1);
    assert.equal(first.body.paymentUrl, `${SITE}/pay/retried?t=${rows[0]!.payToken}`);
    const page = await http(a.base, 'GET', `/api/pay/retried?t=${rows[0]!.payToken}`);
    assert.notEqual(page.status, 404, 'the acknowledged URL opens its receipt');
    const rejected = await cluster.admin.db.select().from(rejectedWrites).where(eq(rejectedWrites.wallet, m.wallet));
    assert.equal(rejected.length, 1, 'the conflicting create is kept for the merchant');
    assert.equal(rejected[0]!.receiptId, 'clash');
    assert.match(rejected[0]!.reason, /^conflict/);
    const payload = rejected[0]!.entry.payload as { totalCents: string };
    assert.notEqual(BigInt(payload.totalCents), clash[0]!.totalCents, 'the rejected write is the body that lost');
    const events = await cluster.admin.db.select().from(webhookEvents).where(and(eq(webhookEvents.wallet, m.wallet), eq(webhookEvents.type, 'write.rejected')));
    assert.equal(events.length, 1);
    await Promise.all([a.stop(), b.stop()]);
  });

  test('a journal that cannot be written (ENOSPC) answers 503, and nothing it refused appears later', { timeout: 120_000 }, async (t) => {
    const dir = dataDir();
    const journalDir = path.join(dir, 'journal');
    mkdirSync(journalDir, { recursive: true, mode: 0o700 });
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'tmpfs', journalDir], { stdio: 'pipe' });
    } catch (err) {
      t.skip(`cannot mount a tiny tmpfs here (needs root and mount rights): ${String((err as Error).message).split('\n')[0]}`);
      return;
    }
    try {
      // Leave a few kilobytes: the first journaled writes fit, then the disk is full.
      writeFileSync(path.join(journalDir, 'filler'), Buffer.alloc(52 * 1024));
      const m = await merchant();
      const svc = await startService('full', serviceEnv(dir));
      await seeKey(m.key, svc);
      await cluster.pg.stop();
      const acked = new Map<string, string>();
      const refused: string[] = [];
      for (let i = 0; i < 200 && refused.length < 5; i++) {
        const id = `full-${i}`;
        const res = await http(svc.base, 'POST', '/api/receipts', { key: m.key, body: receiptBody(id) });
        if (res.status === 201) acked.set(id, res.body.paymentUrl);
        else {
          assert.equal(res.status, 503, JSON.stringify(res.body));
          assert.equal(res.body.error, 'database_unavailable');
          assert.match(res.body.message, /journal cannot be written/);
          assert.ok(res.headers.get('retry-after'));
          refused.push(id);
        }
      }
      assert.ok(acked.size > 0 && refused.length > 0, `acknowledged ${acked.size}, refused ${refused.length}`);
      // Room again, the database back, and a restart for good measure: exactly what was acknowledged.
      rmSync(path.join(journalDir, 'filler'));
      await svc.stop();
      await cluster.pg.start();
      const again = await startService('full-again', serviceEnv(dir));
      await until(drained(again), 30_000, 'the journal to drain');
      const rows = await storedReceipts(m.wallet);
      assert.deepEqual(rows.map((r) => r.id).sort(), [...acked.keys()].sort());
      for (const r of rows) assert.equal(acked.get(r.id), `${SITE}/pay/${r.id}?t=${r.payToken}`);
      figures.push(`full journal disk: ${acked.size} receipts acknowledged then ${refused.length} answered 503; after room and a restart exactly the ${acked.size} stored`);
      await again.stop();
    } finally {
      execFileSync('umount', ['-l', journalDir]);
    }
  });

  test('figures', () => {
    console.log(figures.join('\n'));
  });
});
