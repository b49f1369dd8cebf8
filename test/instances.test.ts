/**
 * Two real server processes (src/main.ts) behind no load balancer, sharing one PostgreSQL database,
 * one Redis and one dev chain, as a scaled-out deployment runs:
 *   - their rate-limit budget is one budget;
 *   - exactly one of them holds the chain and webhook leases; kill -9 it and the other takes over
 *     within the lease time, no payment is missed and no webhook is accepted twice;
 *   - what one writes, the other reads.
 * The dev chain is the test's own anvil; both instances join it (CHAIN=dev with RPC_URL).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { and, eq, inArray } from 'drizzle-orm';
import { createWalletClient, erc20Abi, http as viemHttp, type Hex } from 'viem';
import { openDatabase, type Database } from '../src/db/client.ts';
import { leases, webhookDeliveries } from '../src/db/schema.ts';
import { devAccount } from '../src/chain/dev-accounts.ts';
import { createSubscription } from '../src/gateway/subscriptions.ts';
import { PLATFORM, startTestChain, type TestChain } from './chain/helpers.ts';
import { freshPostgresDatabase, randomWallet } from './helpers/app.ts';
import { sourceProgram } from '../scripts/service-launcher.ts';
import { http, signInOverHttp, startService as startAnyService, stopAllServices, type HttpSession, type Service } from './helpers/service.ts';
import { newAccount } from './helpers/session.ts';
import { BULK, receiptBody } from './helpers/write-ledger.ts';
import { sleep, until, waitFor } from './helpers/wait.ts';

const SITE = 'http://pay.test';
const LEASE_TTL_MS = 4_000;
const skip =
  process.env.DATABASE_URL && process.env.REDIS_URL
    ? false
    : 'needs DATABASE_URL and REDIS_URL: two instances share one PostgreSQL and one Redis (CI runs this in its second pass)';

let tc: TestChain;
let fresh: { url: string; drop(): Promise<void> };
let admin: Database;
let a: Service;
let b: Service;
const dirs: string[] = [];
const envs = new Map<string, Record<string, string>>();
let receiver: Server | undefined;

function envFor(name: string): Record<string, string> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-instance-'));
  dirs.push(dataDir);
  const env = {
    DATA_DIR: dataDir,
    DATABASE_URL: fresh.url,
    REDIS_URL: process.env.REDIS_URL!,
    SITE_URL: SITE,
    PLATFORM_RECIPIENT_ADDRESS: PLATFORM,
    CHAIN: 'dev',
    RPC_URL: tc.chain.rpcUrl,
    USDC_ADDRESS: tc.chain.usdc.address,
    CONFIRMATIONS: '1',
    LEASE_TTL_MS: String(LEASE_TTL_MS),
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // Sessions are signed with it: instances behind one load balancer must share it.
    JWT_SECRET: 'instances-test-secret-' + 'x'.repeat(32),
  };
  envs.set(name, env);
  return env;
}

/**
 * Both instances run the sources through tsx, as before the other service tests moved to the
 * compiled build: on a loaded 2-core machine the kill -9 test below fails now and then waiting for
 * its first six payments to complete (only one buyer's receipts get swept), with either entry, and
 * it failed more often with the compiled one (5 of 8 runs against 2 of 5). Until that is
 * understood this file keeps the entry it had.
 */
const startService = (name: string, env: Record<string, string>) => startAnyService(name, env, { program: sourceProgram() });

const leaderLine = (what: 'chain worker' | 'webhook dispatcher') => (l: { msg?: string }) => l.msg === `${what} is leader`;

async function leaseHolders(): Promise<Record<string, string>> {
  const rows = await admin.db.select({ name: leases.name, holder: leases.holder }).from(leases);
  return Object.fromEntries(rows.map((r) => [r.name, r.holder]));
}

/** Waits until the current one-minute rate-limit window has room for a short burst. */
async function awayFromWindowEdge(): Promise<void> {
  await until(() => Date.now() % 60_000 <= 52_000, 10_000, 'a one-minute rate-limit window with room for a burst');
}

/** Whether the deliveries of these events (one endpoint: one each) are all recorded as delivered. */
async function recordedDelivered(eventIds: string[]): Promise<boolean> {
  if (eventIds.length === 0) return true;
  const rows = await admin.db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(and(inArray(webhookDeliveries.eventId, eventIds), eq(webhookDeliveries.status, 'delivered')));
  return rows.length === eventIds.length;
}

describe('two instances on one PostgreSQL, one Redis and one dev chain', { skip, timeout: 170_000 }, () => {
  before(async () => {
    tc = await startTestChain();
    fresh = await freshPostgresDatabase(process.env.DATABASE_URL!);
    // Both start at once on the empty database: their migrations must take turns.
    [a, b] = await Promise.all([startService('A', envFor('A')), startService('B', envFor('B'))]);
    admin = await openDatabase({ databaseUrl: fresh.url, poolSize: 2 });
  });

  after(async () => {
    await stopAllServices();
    receiver?.close();
    await admin?.close();
    await fresh?.drop();
    await tc?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('their rate-limit budget is shared: N successes in total, then 429 on both', async () => {
    const wallet = randomWallet();
    const limit = 10;
    const key = (await createSubscription(admin.db, { wallet, rateLimitPerMinute: limit })).primaryKey;
    await awayFromWindowEdge();
    const answers: { via: string; status: number; remaining: string | null }[] = [];
    for (let i = 0; i < limit + 6; i++) {
      const s = i % 2 === 0 ? a : b;
      const res = await http(s.base, 'GET', '/api/receipts', { key });
      answers.push({ via: s.name, status: res.status, remaining: res.headers.get('x-ratelimit-remaining') });
    }
    const ok = answers.filter((x) => x.status === 200);
    assert.equal(ok.length, limit, JSON.stringify(answers));
    assert.ok(answers.slice(0, limit).every((x) => x.status === 200), 'the first N pass, whichever instance serves them');
    const refused = answers.slice(limit);
    assert.ok(refused.every((x) => x.status === 429));
    assert.deepEqual(new Set(refused.map((x) => x.via)), new Set(['A', 'B']), 'both instances refuse once the shared budget is spent');
    assert.deepEqual(answers.slice(0, limit).map((x) => Number(x.remaining)), [...Array(limit).keys()].map((i) => limit - 1 - i));
  });

  test('writes made through one instance are visible through the other', async () => {
    const account = newAccount();
    // A session opened on A is honoured by B: sessions live in the database, signed with the shared JWT_SECRET.
    const s = await signInOverHttp(a.base, account, SITE);
    const me = await http(b.base, 'GET', '/api/auth/me', { headers: s.headers });
    assert.equal(me.status, 200);
    assert.equal(me.body.wallet, s.wallet);

    const sub = await http(b.base, 'POST', '/api/admin/subscriptions', { headers: s.headers, body: {} });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const key: string = sub.body.primaryKey;

    const created = await http(a.base, 'POST', '/api/receipts', { key, body: receiptBody('x-1') });
    assert.equal(created.status, 201);
    const read = await http(b.base, 'GET', '/api/receipts/x-1', { key });
    assert.equal(read.status, 200);
    assert.equal(read.body.totalUsd, 5);
    const again = await http(b.base, 'POST', '/api/receipts', { key, body: receiptBody('x-1') });
    assert.equal(again.body.paymentUrl, created.body.paymentUrl, 'an idempotent re-send through the other instance answers the same');

    const split = await http(a.base, 'POST', '/api/split/deploy', {
      headers: s.headers,
      body: { recipients: [{ address: s.wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] },
    });
    assert.equal(split.status, 200, JSON.stringify(split.body));
    assert.equal((await http(b.base, 'GET', '/api/split/deploy', { key })).body.split.address, split.body.split.address);

    assert.equal((await http(b.base, 'POST', '/api/inventory', { key, body: BULK })).status, 201);
    const order = await http(a.base, 'POST', '/api/orders', { key, body: { items: [{ sku: BULK.sku, qty: 3 }] } });
    assert.equal(order.status, 200, JSON.stringify(order.body));
    const stock = await http(b.base, 'GET', '/api/inventory', { key });
    assert.equal(stock.body.items.find((i: { sku: string }) => i.sku === BULK.sku).stockQty, BULK.stockQty - 3);
    const listed = await http(b.base, 'GET', '/api/receipts', { key });
    assert.deepEqual(new Set(listed.body.receipts.map((r: { receiptId: string }) => r.receiptId)), new Set(['x-1', order.body.receipt.receiptId]));
  });

  test('one leader at a time; kill -9 it and the other takes over with no payment missed and no webhook twice', async () => {
    const started = Date.now();
    // Which instance leads is whichever won the race at start-up.
    const leader = await waitFor(() => [a, b].find((s) => s.logs.some(leaderLine('chain worker'))), 10_000, 'a leader');
    const holderOf = (s: Service, what: 'chain worker' | 'webhook dispatcher') =>
      [...s.logs].reverse().find(leaderLine(what))?.holder as string | undefined;
    const webhookLeader = await waitFor(() => [a, b].find((s) => s.logs.some(leaderLine('webhook dispatcher'))), 10_000, 'a webhook dispatcher');
    if (webhookLeader !== leader) {
      // The two leases are independent, so the start-up race may split them. This test kills the
      // holder of both: the other one stops gracefully (releasing its lease) and starts again.
      await webhookLeader.stop();
      await until(async () => (await leaseHolders()).webhooks === holderOf(leader, 'webhook dispatcher'), 10_000, 'the leader to take the webhook lease');
      const restarted = await startService(webhookLeader.name, envs.get(webhookLeader.name)!);
      if (webhookLeader === a) a = restarted;
      else b = restarted;
    }
    const standby = leader === a ? b : a;
    let holders: Awaited<ReturnType<typeof leaseHolders>>;
    for (let i = 0; i < 5; i++) {
      holders = await leaseHolders();
      assert.equal(holders.chain, holderOf(leader, 'chain worker'));
      assert.equal(holders.webhooks, holderOf(leader, 'webhook dispatcher'));
      // Proving absence, not a wait: the leases stay put over several of the standby's tries.
      await sleep(300);
    }
    // The payout worker's lease is a third, independent one (src/payments/payout-worker.ts): either may hold it.
    assert.equal(standby.logs.filter((l) => /^(chain worker|webhook dispatcher) is leader$/.test(String(l.msg))).length, 0, 'the standby never led');

    // The merchant: a split on chain, a key, and a webhook endpoint on loopback.
    const s: HttpSession = await signInOverHttp(leader.base, newAccount(), SITE);
    const split = await http(leader.base, 'POST', '/api/split/deploy', {
      headers: s.headers,
      body: { recipients: [{ address: s.wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] },
    });
    assert.equal(split.status, 200, JSON.stringify(split.body));
    // The test polls hard: a key above the products' per-minute budgets.
    const key = (await createSubscription(admin.db, { wallet: s.wallet, rateLimitPerMinute: 1_000_000 })).primaryKey;

    let gateOpen = true;
    const accepted = new Map<string, number>();
    const refused = new Map<string, number>();
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const id = String(req.headers['webhook-id']);
        const map = gateOpen ? accepted : refused;
        map.set(id, (map.get(id) ?? 0) + 1);
        res.statusCode = gateOpen ? 200 : 503;
        res.end();
      });
    });
    await new Promise<void>((r) => receiver!.listen(0, '127.0.0.1', r));
    const hook = await http(standby.base, 'POST', '/api/admin/webhooks', {
      headers: s.headers,
      body: { url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`, events: ['receipt.completed'] },
    });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));

    // Buyers pay continuously, before, during and after the kill, through whichever instance is up.
    type Phase = 'before' | 'during' | 'after';
    let phase: Phase = 'before';
    let stopping = false;
    const payments: { id: string; hash: Hex; payTo: Hex; phase: Phase; via: string }[] = [];
    const alive = () => [a, b].filter((x) => x.child.exitCode === null && x.child.signalCode === null);
    /** A buyer's browser retries an idempotent call on the other instance when its connection fails. */
    const call = async (n: number, method: string, url: string, body?: unknown) => {
      for (let attempt = 0; ; attempt++) {
        const up = alive();
        const via = up[(n + attempt) % up.length]!;
        try {
          return { via, res: await http(via.base, method, url, { key, ...(body === undefined ? {} : { body }) }) };
        } catch (err) {
          if (attempt >= 5) throw err;
          // Pacing, not a wait: the buyer's client backs off before its retry, as a browser's would.
          await sleep(200);
        }
      }
    };
    const payerErrors: unknown[] = [];
    const payer = async (buyerIndex: number) => {
      const wallet = createWalletClient({ chain: tc.chain.publicClient.chain, transport: viemHttp(tc.chain.rpcUrl), account: devAccount(buyerIndex) });
      for (let n = 0; !stopping; n++) {
        const id = `pay-${buyerIndex}-${n}`;
        const p: Phase = phase;
        const totalUsd = 1.5 + buyerIndex;
        const created = await call(n, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Coffee', priceUsd: totalUsd }], totalUsd });
        assert.equal(created.res.status, 201, JSON.stringify(created.res.body));
        const search = new URL(created.res.body.paymentUrl).search;
        const quote = await call(n, 'GET', `/api/pay/${id}${search}`);
        // The buyer pays the receipt's own address; the hash is only a hint, as the payment page sends it.
        const { tokenAddress, payTo, due } = quote.res.body.payment;
        const hash = await wallet.writeContract({ address: tokenAddress, abi: erc20Abi, functionName: 'transfer', args: [payTo, BigInt(due)] });
        await tc.chain.publicClient.waitForTransactionReceipt({ hash });
        const sub = await call(n, 'POST', `/api/pay/${id}/transaction${search}`, { transactionHash: hash });
        assert.equal(sub.res.status, 202, JSON.stringify(sub.res.body));
        payments.push({ id, hash, payTo, phase: p, via: sub.via.name });
        // Pacing, not a wait: buyers arrive one after another, not in a tight loop.
        await sleep(150);
      }
    };
    const statusOf = async (id: string) => (await http(standby.base, 'GET', `/api/receipts/${id}`, { key })).body.status as string;
    const completed = async (ids: string[]) => (await Promise.all(ids.map(statusOf))).every((st) => st === 'completed');

    const payers = Promise.all([0, 1, 2].map((i) => payer(i).catch((err: unknown) => void payerErrors.push(err))));
    let killedAt: number;
    try {
      // The first six payments, settled: the payers keep paying, so "every payment so far" would
      // always include one still in flight on a busy machine.
      await until(() => payments.filter((p) => p.phase === 'before').length >= 6, 30_000, 'six payments before the kill');
      const firstSix = payments.filter((p) => p.phase === 'before').slice(0, 6).map((p) => p.id);
      await until(() => completed(firstSix), 30_000, 'payments completed before the kill');
      // Refuse webhooks from here on, and kill only once every delivery the endpoint accepted is
      // recorded: none is accepted and then lost with the leader before it recorded it (that
      // send-then-crash window is at-least-once by nature).
      gateOpen = false;
      const acceptedSoFar = [...accepted.keys()];
      await until(() => recordedDelivered(acceptedSoFar), 15_000, 'every accepted webhook to be recorded as delivered');
      killedAt = Date.now();
      phase = 'during';
      await leader.kill();
      gateOpen = true;
      const chainTakeover = await standby.waitForLog(leaderLine('chain worker'), LEASE_TTL_MS + 10_000);
      const hookTakeover = await standby.waitForLog(leaderLine('webhook dispatcher'), LEASE_TTL_MS + 10_000);
      phase = 'after';
      const takeoverMs = Math.max(Number(chainTakeover.time), Number(hookTakeover.time)) - killedAt;
      console.log(`takeover ${Number(chainTakeover.time) - killedAt} ms (chain), ${Number(hookTakeover.time) - killedAt} ms (webhooks); lease ${LEASE_TTL_MS} ms`);
      // Within the lease, plus the standby's polling interval and some scheduling slack on a busy machine.
      // A real-time bound on purpose: two real processes, a real kill -9 and a lease that expires by
      // the database's clock; taking over within the lease is the behaviour under test.
      assert.ok(takeoverMs <= LEASE_TTL_MS + 3_000, `took over in ${takeoverMs} ms, lease ${LEASE_TTL_MS} ms`);
      holders = await leaseHolders();
      assert.equal(holders.chain, chainTakeover.holder);
      assert.equal(holders.webhooks, hookTakeover.holder);
      await until(() => payments.filter((p) => p.phase === 'after').length >= 6, 30_000, 'payments after the takeover');
    } catch (err) {
      const statuses = await Promise.all(payments.map(async (p) => `${p.id} ${await statusOf(p.id)}`));
      const problems = [a, b].flatMap((x) => x.logs.filter((l) => Number(l.level) >= 40).map((l) => `${x.name}: ${JSON.stringify(l).slice(0, 600)}`));
      throw new Error(`${(err as Error).message}\n${statuses.join('\n')}\n${problems.slice(-15).join('\n')}`, { cause: err });
    } finally {
      stopping = true;
      await payers;
    }
    assert.deepEqual(payerErrors, [], 'every payment step was answered');

    const ids = payments.map((p) => p.id);
    assert.ok(payments.some((p) => p.phase === 'during'), 'some payments were made while no instance led');
    await until(() => completed(ids), 30_000, 'every payment to complete');
    // Every payment was indexed and swept into the split under its receipt: the split transaction
    // whose counterparty is the receipt's payment address carries the receipt's id, once.
    for (const p of payments) {
      const rows = (await http(standby.base, 'GET', `/api/split/transactions?address=${p.payTo}`, { key })).body as { receiptId: string | null }[];
      assert.deepEqual(rows.map((r) => r.receiptId), [p.id], `the sweep of ${p.id} is indexed once, under it`);
    }
    // One receipt.completed event per payment, each accepted by the endpoint exactly once.
    await until(() => accepted.size >= payments.length, 30_000, 'every webhook');
    // Proving absence, not a wait: no late duplicate arrives in the second after the last one.
    await sleep(1_000);
    assert.equal(accepted.size, payments.length);
    const twice = [...accepted].filter(([, n]) => n !== 1);
    assert.deepEqual(twice, [], 'no webhook-id accepted twice');
    const byPhase = (ph: Phase) => payments.filter((p) => p.phase === ph).length;
    console.log(
      `${payments.length} payments (${byPhase('before')} before, ${byPhase('during')} during, ${byPhase('after')} after the kill), ` +
        `all completed and indexed; ${accepted.size} webhooks accepted once each, ${refused.size} refused while the endpoint was closed ` +
        `and redelivered; ${Math.round((Date.now() - started) / 1000)} s`,
    );
  });
});

