/**
 * Sweeps on a chain that misbehaves, on the real dev chain: anvil's own RPC leaves transactions
 * pending (automine off), raises the base fee 200-fold, drops a transaction from its pool and
 * empties the deployer; a proxy answers stale nonces like a lagging node. The worker's passes are
 * run by hand, so each step is known. Every test checks the money: exactly one sweep per address,
 * none that moves nothing, and every receipt completing once the chain lets it.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { createPublicClient, createWalletClient, erc20Abi, http, parseEther, parseGwei, zeroAddress, type Hex } from 'viem';
import { devAccount, DEV_DEPLOYER_INDEX } from '../../src/chain/dev-accounts.ts';
import type { ChainDeps, ChainPublicClient, ChainWalletClient } from '../../src/chain/client.ts';
import { paymentForwarderFactoryAbi } from '../../src/chain/payment-address.ts';
import { chainNonces, receipts, receiptTransfers, receiptWatch } from '../../src/db/schema.ts';
import { checkRequestedBalances, PAGE_CHECK_EVERY_MS, requestBalanceCheck, stampWaitMs } from '../../src/payments/other-money.ts';
import { HOLD_MS, RpcBudget } from '../../src/chain/rpc-budget.ts';
import { sweepCall } from '../../src/payments/pay-address.ts';
import { sweepsOf } from '../../src/payments/sweeper.ts';
import { ChainWorker } from '../../src/payments/worker.ts';
import { admin, newAccount, signIn } from '../helpers/session.ts';
import { PLAIN_PROVIDER, startProviderProxy, type ProviderProxy } from '../sim/proxy.ts';
import { anvilClient, deployShop, devWallet, PLATFORM, postReceipt, receiptPayTo, testLogger, useChainApp, type Shop } from './helpers.ts';

/** A superadmin: /healthz shows its details to this wallet's session. */
const monitor = newAccount();
// The app's chain worker is not started: the tests run its passes.
// A superadmin reads /healthz's details.
const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM, MAX_FEE_GWEI: '50', SWEEP_DUST_USD: '1', SUPERADMIN_WALLETS: monitor.address });

const db = () => f.t.deps.database.db;
const worker = () => f.t.deps.chainWorker!;
const anvil = () => anvilClient(f.tc);
const deployer = () => f.tc.chain.walletClient!.account.address;
const usdc = () => f.tc.chain.usdc.address;
const buyer = (i: number) => devWallet(f.tc, i);

/** One pass and the sweeps it started. */
async function step(w: ChainWorker = worker()): Promise<void> {
  await w.pass();
  await w.sweeper.idle();
}

/** Passes until the worker has read every block mined so far (a pass reads a bounded number), then one more. */
async function stepToHead(w: ChainWorker = worker()): Promise<void> {
  const head = await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
  for (let i = 0; i < 50 && (w.lastPass?.head ?? -1n) < head; i++) await step(w);
  assert.ok(w.lastPass!.head >= head, 'the worker read the newest block');
  await step(w);
}

/**
 * Passes until the receipt completes: two on a quiet machine (the payment's, then the sweep's);
 * on a loaded one a pass's time budget may leave it to the next. Fails naming the last pass and
 * the receipt's sweeps.
 */
async function stepUntilCompleted(sh: Shop, id: string, w: ChainWorker = worker()): Promise<void> {
  let now = '';
  for (let passes = 0; passes < 6 && now !== 'completed'; passes++) {
    await step(w);
    now = (await status(sh, id)).status;
  }
  const seen = async () => {
    const [row] = await db().select({ payTo: receipts.payAddress }).from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
    const sent = row?.payTo ? await sweepsOf(db(), row.payTo) : [];
    return JSON.stringify({ pass: w.lastPass, sweeps: sent }, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  };
  assert.equal(now, 'completed', now === 'completed' ? id : `${id}: ${await seen()}`);
}

/** Mines one block whose base fee is `wei`. */
async function mineAt(wei: bigint): Promise<void> {
  await anvil().setNextBlockBaseFeePerGas({ baseFeePerGas: wei });
  await anvil().mine({ blocks: 1 });
}

/** Fees fall back to 0.05 gwei: two blocks with a pass after each, then one more pass, so the waiting sweep gets in and the next is sent and mined. */
async function feesFall(): Promise<void> {
  await mineAt(parseGwei('0.05'));
  await step();
  await mineAt(parseGwei('0.05'));
  await step();
  await step();
}

const shop = (): Promise<Shop> => deployShop(f.t);

/** A chain worker of its own (driven by the test) that reads the chain through the provider at `url`. */
function workerVia(url: string): ChainWorker {
  const publicClient = createPublicClient({ chain: f.tc.chain.publicClient.chain, transport: http(url), pollingInterval: 50 }) as ChainPublicClient;
  return new ChainWorker({ db: db(), chain: { ...f.tc.chain, publicClient }, logger: testLogger(), confirmations: 1, platformRecipient: PLATFORM, startBlock: 0n });
}

async function receipt(sh: Shop, id: string, totalUsd: number, extra: Record<string, unknown> = {}): Promise<{ id: string; payTo: Hex }> {
  return { id, payTo: await receiptPayTo(f.t, sh, id, totalUsd, extra) };
}

/** Sends a buyer's transfer; with automine off it waits in the pool for the next block. */
function pay(from: number, to: Hex, amount: bigint): Promise<Hex> {
  return buyer(from).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [to, amount], gas: 100_000n });
}

async function payMined(from: number, to: Hex, amount: bigint): Promise<void> {
  const hash = await pay(from, to, amount);
  assert.equal((await f.tc.chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');
}

async function status(sh: Shop, id: string): Promise<{ status: string; exception: string | null }> {
  const res = await f.t.call(sh.key, 'GET', `/api/receipts/${id}`);
  assert.equal(res.status, 200);
  return { status: res.body.status, exception: res.body.exception };
}

/** Every factory Swept event out of a payment address: the sweeps that really moved something. */
async function swept(payTo: Hex): Promise<bigint[]> {
  const logs = await f.tc.chain.publicClient.getContractEvents({
    address: f.tc.chain.paymentFactory!,
    abi: paymentForwarderFactoryAbi,
    eventName: 'Swept',
    args: { forwarder: payTo },
    fromBlock: 0n,
  });
  return logs.map((l) => l.args.amount!);
}

const balance = (of: Hex) => f.tc.chain.publicClient.readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [of] });
const minedNonce = () => f.tc.chain.publicClient.getTransactionCount({ address: deployer(), blockTag: 'latest' });

describe('a base-fee spike', () => {
  test('200-fold for a while: the stuck sweep is replaced with the same nonce and a higher fee; no duplicate, no empty sweep', async () => {
    const sh = await shop();
    const r1 = await receipt(sh, 'spike-1', 3);
    const r2 = await receipt(sh, 'spike-2', 4);
    await payMined(1, r1.payTo, 3_000_000n);
    await anvil().setAutomine(false);
    try {
      await mineAt(parseGwei('0.05'));
      const before = await minedNonce();
      await step();
      const [sent] = await sweepsOf(db(), r1.payTo);
      assert.ok(sent !== undefined, 'a sweep was sent');
      assert.equal(sent.state, 'pending');
      assert.equal(sent.nonce, BigInt(before), "the account's next nonce");
      assert.equal(sent.amountUnits, '3000000', 'the balance it moves, read before sending');
      const first = BigInt(sent.attempts[0]!.maxFeePerGas);
      assert.ok(first < parseGwei('10'), `sent at the fee of the day (${first})`);

      // The spike: 200 times the base fee, above what the sweep offers.
      for (let i = 0; i < 3; i++) {
        await mineAt(parseGwei('10'));
        await step();
      }
      const [stuck] = await sweepsOf(db(), r1.payTo);
      assert.equal(stuck!.attempts.length, 2, 'replaced once after three blocks');
      assert.equal(stuck!.nonce, sent.nonce, 'with the same nonce');
      assert.ok(BigInt(stuck!.attempts[1]!.maxFeePerGas) >= parseGwei('20'), 'at a fee that gets in during the spike');
      assert.ok(BigInt(stuck!.attempts[1]!.maxPriorityFeePerGas) * 100n >= BigInt(stuck!.attempts[0]!.maxPriorityFeePerGas) * 110n, 'the tip raised by at least 10 %');
      assert.equal((await status(sh, 'spike-1')).status, 'tx_mined');

      // Another buyer pays during the spike; the replacement and the payment are mined.
      await pay(2, r2.payTo, 4_000_000n);
      await mineAt(parseGwei('10'));
      await step();
      const [done] = await sweepsOf(db(), r1.payTo);
      assert.equal(done!.state, 'mined');
      assert.equal(done!.minedHash, stuck!.attempts[1]!.hash, 'the replacement is the one mined');
      // The second receipt's sweep, then fees fall.
      await feesFall();
    } finally {
      await anvil().setAutomine(true);
    }
    assert.equal((await status(sh, 'spike-1')).status, 'completed');
    assert.equal((await status(sh, 'spike-2')).status, 'completed');
    assert.deepEqual(await swept(r1.payTo), [3_000_000n], 'exactly one sweep moved the money, none empty');
    assert.deepEqual(await swept(r2.payTo), [4_000_000n]);
    assert.equal(await balance(sh.split), 7_000_000n);
    const rows = [...(await sweepsOf(db(), r1.payTo)), ...(await sweepsOf(db(), r2.payTo))];
    assert.deepEqual(rows.map((r) => r.state), ['mined', 'mined']);
    assert.equal(rows[1]!.nonce, rows[0]!.nonce + 1n, 'no nonce skipped or used twice');
  });

  test('above MAX_FEE_GWEI the sweep waits and says so, no new nonce is used meanwhile; when fees fall everything completes', async () => {
    const sh = await shop();
    const r3 = await receipt(sh, 'cap-1', 5);
    const r4 = await receipt(sh, 'cap-2', 6);
    await payMined(3, r3.payTo, 5_000_000n);
    await anvil().setAutomine(false);
    try {
      await mineAt(parseGwei('0.05'));
      await step();
      const [sent] = await sweepsOf(db(), r3.payTo);
      assert.equal(sent!.state, 'pending');
      const [kept] = await db().select().from(chainNonces).where(eq(chainNonces.account, deployer().toLowerCase()));
      // 4,000-fold: a replacement would need more than the 50 gwei cap.
      for (let i = 0; i < 4; i++) {
        await mineAt(parseGwei('200'));
        await step();
      }
      const [waiting] = await sweepsOf(db(), r3.payTo);
      assert.equal(waiting!.state, 'pending');
      assert.equal(waiting!.atFeeCap, true);
      assert.equal(waiting!.attempts.length, 1, 'nothing above the cap was sent');
      assert.equal(worker().sweepHealth().atFeeCap, 1);
      const health = await admin(f.t, await signIn(f.t, monitor), 'GET', '/healthz');
      assert.equal(health.body.payments.sweepsAtFeeCap, 1, JSON.stringify(health.body));
      const told = await admin(f.t, sh.s, 'GET', '/api/admin/sweeps/status');
      assert.equal(told.status, 200, JSON.stringify(told.body));
      assert.deepEqual([told.body.atFeeCap, told.body.receiptsAtFeeCap], [1, ['cap-1']], 'the merchant is told, in the admin app');
      const stranger = await signIn(f.t);
      assert.deepEqual((await admin(f.t, stranger, 'GET', '/api/admin/sweeps/status')).body.receiptsAtFeeCap, [], 'only of their own receipts');

      // Another payment meanwhile: its sweep waits behind the stuck nonce instead of taking the next one.
      await pay(4, r4.payTo, 6_000_000n);
      await mineAt(parseGwei('200'));
      await step();
      await step();
      assert.deepEqual(await sweepsOf(db(), r4.payTo), [], 'no sweep while a nonce is stuck');
      const [still] = await db().select().from(chainNonces).where(eq(chainNonces.account, deployer().toLowerCase()));
      assert.equal(still!.next, kept!.next, 'no new nonce used');
      assert.equal(worker().sweepHealth().atFeeCap, 2, 'both wait for fees');

      // Fees fall: the first sweep gets in, then the second is sent.
      await feesFall();
    } finally {
      await anvil().setAutomine(true);
    }
    assert.equal((await status(sh, 'cap-1')).status, 'completed');
    assert.equal((await status(sh, 'cap-2')).status, 'completed');
    assert.deepEqual(await swept(r3.payTo), [5_000_000n]);
    assert.deepEqual(await swept(r4.payTo), [6_000_000n]);
    assert.equal(worker().sweepHealth().atFeeCap, 0);
  });

  test('a sweep the node dropped from its pool is sent again with the same nonce, by a fresh worker after a restart', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'drop-1', 2);
    await payMined(5, r.payTo, 2_000_000n);
    await anvil().setAutomine(false);
    try {
      await mineAt(parseGwei('0.05'));
      await step();
      const [sent] = await sweepsOf(db(), r.payTo);
      await anvil().dropTransaction({ hash: sent!.attempts[0]!.hash as Hex });
      const fresh = new ChainWorker({ db: db(), chain: f.tc.chain, logger: testLogger(), confirmations: 1, platformRecipient: PLATFORM, startBlock: 0n });
      for (let i = 0; i < 3; i++) {
        await mineAt(parseGwei('0.05'));
        await step(fresh);
      }
      const [again] = await sweepsOf(db(), r.payTo);
      assert.equal(again!.attempts.length, 2);
      assert.equal(again!.nonce, sent!.nonce);
      await mineAt(parseGwei('0.05'));
      await step(fresh);
      await step(fresh);
    } finally {
      await anvil().setAutomine(true);
    }
    assert.equal((await status(sh, 'drop-1')).status, 'completed');
    assert.deepEqual(await swept(r.payTo), [2_000_000n]);
  });
});

describe('the deployer out of ETH', () => {
  test("another merchant's receipt still reaches tx_mined, an expired order expires with its stock back, /healthz says sweeps wait for gas; funding completes everything", async () => {
    const a = await shop();
    const b = await shop();
    const inv = await f.t.call(b.key, 'POST', '/api/inventory', { sku: 'lamp', name: 'Lamp', priceUsd: 9, stockQty: 2, taxable: false });
    assert.ok(inv.status < 300, JSON.stringify(inv.body));
    const order = await f.t.call(b.key, 'POST', '/api/orders', { items: [{ sku: 'lamp', qty: 2 }] });
    assert.equal(order.status, 200, JSON.stringify(order.body));
    const orderId = order.body.receipt.receiptId as string;
    const a1 = await receipt(a, 'gas-a1', 3);
    const a2 = await receipt(a, 'gas-a2', 2);
    const b1 = await receipt(b, 'gas-b1', 4);
    await step();
    const funds = await f.tc.chain.publicClient.getBalance({ address: deployer() });
    await anvil().setBalance({ address: deployer(), value: 0n });
    try {
      await payMined(6, a1.payTo, 3_000_000n);
      await payMined(6, a2.payTo, 2_000_000n);
      await step();
      await payMined(7, b1.payTo, 4_000_000n);
      await db().update(receipts).set({ expiresAt: Date.now() - 1 }).where(and(eq(receipts.wallet, b.wallet), eq(receipts.id, orderId)));
      await step();
      await step();
      assert.equal((await status(a, 'gas-a1')).status, 'tx_mined');
      assert.equal((await status(b, 'gas-b1')).status, 'tx_mined', "another merchant's receipt is not held back");
      assert.deepEqual([(await status(b, orderId)).status, (await status(b, orderId)).exception], ['failed', 'expired']);
      const stock = (await f.t.call(b.key, 'GET', '/api/inventory')).body.items.find((i: { sku: string }) => i.sku === 'lamp').stockQty;
      assert.equal(stock, 2, 'the reserved stock returned on time');
      const h = worker().sweepHealth();
      assert.equal(h.waitingForGas, 3);
      assert.equal(h.deployerLow, true);
      assert.equal(h.deployerBalanceWei, '0');
      const health = await admin(f.t, await signIn(f.t, monitor), 'GET', '/healthz');
      assert.equal(health.body.payments.sweepsWaitingForGas, 3, JSON.stringify(health.body));
      assert.equal(health.body.payments.deployerLow, true);
      assert.deepEqual(await sweepsOf(db(), a1.payTo), [], 'nothing was sent that could not be paid');
      const banner = await admin(f.t, a.s, 'GET', '/api/admin/sweeps/status');
      assert.deepEqual([banner.body.waitingForGas, banner.body.deployerLow], [3, true], 'the admin app shows it');
    } finally {
      await anvil().setBalance({ address: deployer(), value: funds > parseEther('1') ? funds : parseEther('100') });
    }
    await step();
    await step();
    for (const [sh, id] of [[a, 'gas-a1'], [a, 'gas-a2'], [b, 'gas-b1']] as const) assert.equal((await status(sh, id)).status, 'completed', id);
    assert.deepEqual(await swept(a1.payTo), [3_000_000n]);
    assert.equal(worker().sweepHealth().waitingForGas, 0);
    assert.equal(worker().sweepHealth().deployerLow, false);
  });
});

describe('isolation', () => {
  test('a receipt whose settling throws is skipped; the others complete and expire in the same pass', async () => {
    const sh = await shop();
    const broken = await receipt(sh, 'iso-broken', 2);
    const fine = await receipt(sh, 'iso-fine', 3);
    await receipt(sh, 'iso-due', 1);
    await step();
    await payMined(2, broken.payTo, 2_000_000n);
    await payMined(3, fine.payTo, 3_000_000n);
    // A row the settle code cannot read: every pass throws on it.
    const bad = { transactionHash: `0x${'ba'.repeat(32)}`, logIndex: 0 };
    await db().insert(receiptTransfers).values({
      ...bad,
      wallet: sh.wallet,
      receiptId: 'iso-broken',
      kind: 'in',
      token: usdc().toLowerCase(),
      fromAddress: PLATFORM,
      amountUnits: 'garbage',
      blockNumber: 1n,
      blockHash: `0x${'00'.repeat(32)}`,
      timestamp: 0,
    });
    await db().update(receipts).set({ expiresAt: Date.now() - 1 }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'iso-due')));
    await step();
    assert.ok(worker().lastPass!.failed >= 1, 'the failure is counted');
    await step();
    assert.equal((await status(sh, 'iso-fine')).status, 'completed');
    assert.equal((await status(sh, 'iso-due')).status, 'failed');
    await db().delete(receiptTransfers).where(and(eq(receiptTransfers.transactionHash, bad.transactionHash), eq(receiptTransfers.logIndex, 0)));
    // Repaired, it completes too.
    await stepUntilCompleted(sh, 'iso-broken');
  });
});

describe('dust', () => {
  test('tiny transfers to many payment addresses wait instead of costing a sweep each; a covered receipt is always swept, a top-up sweeps all at once', async () => {
    const sh = await shop();
    const dust = await Promise.all(Array.from({ length: 25 }, (_, i) => receipt(sh, `dust-${i}`, 5)));
    const small = await receipt(sh, 'dust-small', 0.01);
    const other = await shop();
    const real = await receipt(other, 'dust-real', 8);
    await step();
    const before = await minedNonce();
    for (const d of dust) await pay(8, d.payTo, 1n);
    await payMined(8, small.payTo, 10_000n);
    await payMined(1, real.payTo, 8_000_000n);
    await stepToHead();
    await step();
    assert.equal((await status(other, 'dust-real')).status, 'completed');
    assert.equal((await status(sh, 'dust-small')).status, 'completed', 'a covered receipt is swept however small');
    for (const d of dust) assert.deepEqual(await sweepsOf(db(), d.payTo), [], 'dust is not swept');
    assert.equal(await minedNonce(), before + 2, 'two sweeps in all: the covered receipts');
    // A pass settles within a time budget (most money first), so on a slow database the last of
    // the dust may take a pass or two more; then it leaves the watch list for good.
    let watched = await db().select().from(receiptWatch).where(eq(receiptWatch.wallet, sh.wallet));
    for (let passes = 0; watched.length > 0 && passes < 5; passes++) {
      await step();
      watched = await db().select().from(receiptWatch).where(eq(receiptWatch.wallet, sh.wallet));
    }
    assert.deepEqual(watched, [], 'dust settled short leaves the watch list: it costs later passes nothing');
    assert.equal(await minedNonce(), before + 2, 'and still no sweep of dust');
    // The buyer tops one up: one sweep moves everything. Two passes (the top-up's, then the
    // sweep's) on a quiet machine; a loaded one may need one or two more, as above.
    await payMined(8, dust[0]!.payTo, 4_999_999n);
    await stepUntilCompleted(sh, 'dust-0');
    assert.deepEqual(await swept(dust[0]!.payTo), [5_000_000n]);
  });

  test('a payment and a small receipt paid in full, in one block with dust, are both swept by the pass that reads the block', async () => {
    const sh = await shop();
    const dust = await Promise.all(Array.from({ length: 25 }, (_, i) => receipt(sh, `one-block-dust-${i}`, 5)));
    const small = await receipt(sh, 'one-block-small', 0.01);
    const big = await receipt(sh, 'one-block-big', 8);
    await stepToHead();
    await anvil().setAutomine(false);
    try {
      for (const d of dust) await pay(8, d.payTo, 1n);
      await pay(7, small.payTo, 10_000n);
      await pay(6, big.payTo, 8_000_000n);
      await anvil().mine({ blocks: 1 });
    } finally {
      await anvil().setAutomine(true);
    }
    await step();
    // Settled most money first: the payment, then the small receipt, then dust within the budget.
    assert.equal((await sweepsOf(db(), big.payTo)).length, 1, 'the payment is swept by the pass that read it');
    assert.equal((await sweepsOf(db(), small.payTo)).length, 1, 'so is the small receipt paid in full: it settled before the sweeps started');
    for (const d of dust) assert.deepEqual(await sweepsOf(db(), d.payTo), [], 'dust is not swept');
  });
});

describe('a node that answers stale nonces', () => {
  let proxy: Server;
  let staleAt: bigint | undefined;
  before(async () => {
    // A load-balanced provider with a lagging node behind it: the pending count is the one from
    // when the proxy started, and every other answer for the latest count is that old one too.
    let flip = false;
    const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const one = (call: { id: number; method: string; params: unknown[] }) => {
        if (call.method === 'eth_getTransactionCount' && staleAt !== undefined) {
          flip = !flip;
          if (call.params[1] === 'pending' || flip) return { jsonrpc: '2.0', id: call.id, result: `0x${staleAt.toString(16)}` };
        }
        return undefined;
      };
      const calls = Array.isArray(body) ? body : [body];
      const answers = await Promise.all(
        calls.map(async (call) => {
          const stale = one(call);
          if (stale !== undefined) return stale;
          const upstream = await fetch(f.tc.chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) });
          return upstream.json();
        }),
      );
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
    };
    proxy = createServer((req, res) => {
      answer(req, res).catch(() => {
        res.statusCode = 502;
        res.end();
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  });
  after(() => new Promise<void>((resolve) => proxy.close(() => resolve())));

  test('sweeps sent through it never reuse a nonce, and every receipt completes', async () => {
    const sh = await shop();
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const chain = f.tc.chain.publicClient.chain;
    const publicClient = createPublicClient({ chain, transport: http(url), pollingInterval: 50 }) as ChainPublicClient;
    const walletClient = createWalletClient({ chain, transport: http(url), account: devAccount(DEV_DEPLOYER_INDEX) }) as ChainWalletClient;
    const lagging: ChainDeps = { ...f.tc.chain, publicClient, walletClient };
    const w = new ChainWorker({ db: db(), chain: lagging, logger: testLogger(), confirmations: 1, platformRecipient: PLATFORM, startBlock: 0n });
    staleAt = BigInt(await minedNonce());
    const rs = await Promise.all([1, 2, 3].map((i) => receipt(sh, `lag-${i}`, i)));
    for (const [i, r] of rs.entries()) {
      await payMined(2, r.payTo, BigInt(i + 1) * 1_000_000n);
      await step(w);
    }
    await step(w);
    await step(w);
    staleAt = undefined;
    for (const r of rs) {
      assert.equal((await status(sh, r.id)).status, 'completed', r.id);
      const rows = await sweepsOf(db(), r.payTo);
      assert.deepEqual(rows.map((x) => [x.state, x.attempts.length]), [['mined', 1]], 'sent once, mined');
    }
    const nonces = (await Promise.all(rs.map((r) => sweepsOf(db(), r.payTo)))).map((x) => x[0]!.nonce);
    assert.deepEqual(nonces, [nonces[0]!, nonces[0]! + 1n, nonces[0]! + 2n]);
  });
});

describe('a node behind answers the balance read', () => {
  let provider: ProviderProxy;
  before(async () => {
    provider = await startProviderProxy({ upstream: f.tc.chain.rpcUrl, behaviour: PLAIN_PROVIDER });
  });
  after(() => provider?.close());

  test("the sweep goes out in the pass that read the payment's block: the read is pinned to it and asked again", async () => {
    const sh = await shop();
    const w = workerVia(provider.url);
    const r = await receipt(sh, 'lag-balance', 3);
    await stepToHead(w);
    // Every balance read now meets, twice, a node two blocks behind: asked at `latest` it would
    // answer its own older head, where the address is still empty, and the sweep would wait.
    provider.configure({ lag: { share: 1, minBlocks: 2, maxBlocks: 2, methods: ['eth_call', 'eth_getBalance'], limit: 2 } });
    provider.resetStats();
    await payMined(3, r.payTo, 3_000_000n);
    await step(w);
    assert.equal(provider.stats().laggedAnswers, 2, 'two balance reads were answered by the node behind');
    const rows = await sweepsOf(db(), r.payTo);
    assert.equal(rows.length, 1, 'the sweep was sent in that pass');
    await step(w);
    assert.deepEqual(await swept(r.payTo), [3_000_000n]);
    assert.equal((await status(sh, 'lag-balance')).status, 'completed');
  });

  test('a sweep in flight is known mined from the transfer the scanner recorded: no nonce and no receipt read', async () => {
    const sh = await shop();
    const w = workerVia(provider.url);
    provider.configure(PLAIN_PROVIDER);
    const r = await receipt(sh, 'followed-by-logs', 2);
    await stepToHead(w);
    await payMined(4, r.payTo, 2_000_000n);
    await step(w);
    const [sent] = await sweepsOf(db(), r.payTo);
    assert.equal(sent?.state, 'pending', 'the sweep was sent (and mined at once) but not yet followed');
    provider.resetStats();
    await step(w);
    const calls = provider.stats().methods;
    assert.equal(calls.eth_getTransactionCount?.calls ?? 0, 0, JSON.stringify(calls));
    assert.equal(calls.eth_getTransactionReceipt?.calls ?? 0, 0, JSON.stringify(calls));
    const [followed] = await sweepsOf(db(), r.payTo);
    assert.equal(followed?.state, 'mined');
    assert.equal(followed?.minedHash, sent.attempts[0]!.hash);
    assert.deepEqual(await swept(r.payTo), [2_000_000n]);
    assert.equal((await status(sh, 'followed-by-logs')).status, 'completed');
  });
});

describe("the chain's nonce count", () => {
  let provider: ProviderProxy;
  before(async () => {
    provider = await startProviderProxy({ upstream: f.tc.chain.rpcUrl, behaviour: PLAIN_PROVIDER });
  });
  after(() => provider?.close());

  test('a run that sends with no sweep pending takes the kept nonce and reads no count; a transaction of the key from outside the service takes that nonce: the send is refused, and the next run reads the count and sends', async () => {
    const sh = await shop();
    const w = workerVia(provider.url);
    const [a, b, c] = [await receipt(sh, 'nonce-a', 1), await receipt(sh, 'nonce-b', 2), await receipt(sh, 'nonce-c', 3)];
    await stepToHead(w);
    await payMined(2, a.payTo, 1_000_000n);
    await stepUntilCompleted(sh, a.id, w);
    await payMined(2, b.payTo, 2_000_000n);
    provider.resetStats();
    await step(w);
    assert.equal((await sweepsOf(db(), b.payTo)).length, 1, "b's sweep was sent");
    assert.equal(provider.stats().methods.eth_getTransactionCount?.calls ?? 0, 0, 'with the kept nonce: every send of the service takes its nonce there');
    await stepUntilCompleted(sh, b.id, w);

    // The deployer's key, used from outside the service, takes the kept nonce.
    const kept = async () => (await db().select().from(chainNonces).where(eq(chainNonces.account, deployer().toLowerCase())))[0]!.next;
    const taken = await kept();
    const outside = await devWallet(f.tc, DEV_DEPLOYER_INDEX).sendTransaction({ to: deployer(), value: 0n, nonce: Number(taken) });
    assert.equal((await f.tc.chain.publicClient.waitForTransactionReceipt({ hash: outside })).status, 'success');
    await payMined(2, c.payTo, 3_000_000n);
    await step(w);
    assert.deepEqual(await sweepsOf(db(), c.payTo), [], 'refused: its nonce was used');
    provider.resetStats();
    await stepUntilCompleted(sh, c.id, w);
    assert.ok((provider.stats().methods.eth_getTransactionCount?.calls ?? 0) >= 1, 'the next run read the count');
    const [sent] = await sweepsOf(db(), c.payTo);
    assert.equal(sent?.nonce, taken + 1n, 'and sent with the nonce after the one taken');
    assert.deepEqual(await swept(c.payTo), [3_000_000n]);
  });
});

describe('a provider that fails or limits the send', () => {
  let provider: ProviderProxy;
  before(async () => {
    provider = await startProviderProxy({ upstream: f.tc.chain.rpcUrl, behaviour: PLAIN_PROVIDER });
  });
  after(() => provider?.close());

  // The provider turns the send away before any node sees it. Counted as sent, the sweep waited
  // unmined for its replacement time (three blocks); the same bytes are sent again instead.
  for (const refusal of [503, 429] as const) {
    test(`a sweep whose send is answered HTTP ${refusal} is sent again at once, the same transaction, and mined in the next block`, async () => {
      const sh = await shop();
      const w = workerVia(provider.url);
      provider.configure(PLAIN_PROVIDER);
      const id = `send-refused-${refusal}`;
      const r = await receipt(sh, id, 2);
      await stepToHead(w);
      provider.configure({ refuse: { status: refusal, methods: ['eth_sendRawTransaction'], limit: 1 } });
      provider.resetStats();
      await payMined(5, r.payTo, 2_000_000n);
      await step(w);
      const stats = provider.stats();
      assert.equal(stats.refusedOnPurpose, 1, 'the first send was turned away');
      assert.equal(stats.methods.eth_sendRawTransaction?.calls, 1, 'the node took the second send');
      const rows = await sweepsOf(db(), r.payTo);
      assert.equal(rows.length, 1, 'one sweep');
      assert.equal(rows[0]!.attempts.length, 1, 'the same transaction, not a replacement');
      const mined = await f.tc.chain.publicClient.getTransactionReceipt({ hash: rows[0]!.attempts[0]!.hash as Hex });
      assert.equal(mined.status, 'success', 'the transaction is in a block');
      await step(w);
      assert.deepEqual(await swept(r.payTo), [2_000_000n]);
      assert.equal((await status(sh, id)).status, 'completed');
      provider.configure({ refuse: null });
    });
  }
});

describe('gas limits', () => {
  /** A worker of its own: its sweeper has learnt no gas limit yet, as after a restart. */
  const freshWorker = () => new ChainWorker({ db: db(), chain: f.tc.chain, logger: testLogger(), confirmations: 1, platformRecipient: PLATFORM, startBlock: 0n });

  /** Passes until the address's sweeps are mined, `count` of them. */
  async function stepUntilSwept(w: ChainWorker, payTo: Hex, count: number): Promise<void> {
    let mined = 0;
    for (let passes = 0; passes < 6 && mined < count; passes++) {
      await step(w);
      mined = (await sweepsOf(db(), payTo)).filter((x) => x.state === 'mined').length;
    }
    assert.equal(mined, count, `${payTo}'s sweeps mined`);
  }

  test('one estimate per kind of sweep: three fresh addresses share one, a second sweep of an address (its forwarder there) makes another', async () => {
    const sh = await shop();
    const w = freshWorker();
    const rs = await Promise.all([1, 2, 3].map((i) => receipt(sh, `gas-kind-${i}`, 3)));
    await stepToHead(w);
    for (const [i, r] of rs.entries()) {
      await payMined(i + 1, r.payTo, 2_000_000n);
      await stepUntilSwept(w, r.payTo, 1);
    }
    assert.equal(w.sweeper.gasLimits.estimates, 1, 'the first fresh address was estimated; the others used its limit');
    const limits = (await Promise.all(rs.map((r) => sweepsOf(db(), r.payTo)))).map((rows) => rows[0]!.gas);
    assert.deepEqual(limits, [limits[0]!, limits[0]!, limits[0]!]);
    // The rest of one receipt: its forwarder is deployed, so this sweep is of another kind.
    await payMined(4, rs[0]!.payTo, 1_000_000n);
    await stepUntilCompleted(sh, 'gas-kind-1', w);
    assert.equal(w.sweeper.gasLimits.estimates, 2);
    const [first, second] = await sweepsOf(db(), rs[0]!.payTo);
    assert.ok(second!.gas < first!.gas, `a sweep through a deployed forwarder needs less gas (${second!.gas} < ${first!.gas})`);
    for (const r of rs.slice(1)) assert.deepEqual(await swept(r.payTo), [2_000_000n]);
    assert.deepEqual(await swept(rs[0]!.payTo), [2_000_000n, 1_000_000n]);
  });

  test("a stranger's empty sweep deploys a forwarder early: the limit learnt there is too low for a fresh address, whose sweep reverts; the next is estimated afresh and moves the money", async () => {
    const sh = await shop();
    const w = freshWorker();
    const early = await receipt(sh, 'gas-early', 2);
    const fresh = await receipt(sh, 'gas-fresh', 3);
    await stepToHead(w);
    // Anyone may call the factory's sweep: on an empty address it only deploys the forwarder, and
    // no transfer tells the service so.
    const [row] = await db().select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'gas-early')));
    const call = sweepCall(f.tc.chain, row!, sh.split, usdc());
    const stranger = buyer(7);
    const deployHash = await stranger.writeContract({ address: call.factory, abi: call.abi, functionName: call.functionName, args: call.args });
    assert.equal((await f.tc.chain.publicClient.waitForTransactionReceipt({ hash: deployHash })).status, 'success');
    assert.notEqual(await f.tc.chain.publicClient.getCode({ address: early.payTo }), undefined, 'the forwarder is deployed');

    await payMined(1, early.payTo, 2_000_000n);
    await stepUntilCompleted(sh, 'gas-early', w);
    assert.equal(w.sweeper.gasLimits.estimates, 1);

    // The fresh address's sweep gets the limit of a deployed forwarder: it runs out of gas.
    await payMined(2, fresh.payTo, 3_000_000n);
    let [failed] = await sweepsOf(db(), fresh.payTo);
    for (let passes = 0; passes < 6 && failed === undefined; passes++) {
      await step(w);
      [failed] = await sweepsOf(db(), fresh.payTo);
    }
    assert.ok(failed !== undefined, 'a sweep was sent');
    const mined = await f.tc.chain.publicClient.waitForTransactionReceipt({ hash: failed.attempts[0]!.hash as Hex });
    assert.equal(mined.status, 'reverted', `${failed.gas} gas is too little to deploy a forwarder`);
    assert.equal(await balance(fresh.payTo), 3_000_000n, 'the money is still at the address');

    // No transfer shows for it; once it is due for replacement its receipt is read, and the next
    // sweep is estimated again.
    let done = '';
    for (let passes = 0; passes < 10 && done !== 'completed'; passes++) {
      await anvil().mine({ blocks: 1 });
      await step(w);
      done = (await status(sh, 'gas-fresh')).status;
    }
    assert.equal(done, 'completed');
    assert.equal(w.sweeper.gasLimits.estimates, 2, 'estimated again after the revert');
    const rows = await sweepsOf(db(), fresh.payTo);
    assert.deepEqual(rows.map((x) => x.state), ['mined', 'mined'], 'the reverted sweep, then the one that moved the money');
    assert.ok(rows[1]!.gas > failed.gas, `the new limit is higher (${rows[1]!.gas} > ${failed.gas})`);
    assert.deepEqual(await swept(fresh.payTo), [3_000_000n], 'one sweep moved the money, none empty');
    assert.deepEqual(await swept(early.payTo), [0n, 2_000_000n], "the stranger's empty sweep, then the service's");
    assert.equal(await balance(sh.split), 5_000_000n);
  });
});

describe('a read of other balances asked for', () => {
  const row = async (sh: Shop, id: string) => (await db().select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id))))[0]!;
  /** Asks for a read at `askedAt` in place of the one the page's first load asked for. */
  const askAt = async (sh: Shop, id: string, askedAt: number) => {
    await db().update(receipts).set({ balancesCheckDue: null }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
    await requestBalanceCheck(db(), { wallet: sh.wallet, receiptId: id }, askedAt, { force: true });
  };
  /** A stored receipt of a new shop whose address then receives `eth`, its worker at the head, and a read asked for at `askedAt()` after the ETH. */
  const ethThenAsk = async (id: string, eth: string, askedAt: () => number) => {
    const sh = await shop();
    const w = new ChainWorker({ db: db(), chain: f.tc.chain, logger: testLogger(), confirmations: 1, platformRecipient: PLATFORM, startBlock: 0n });
    const r = await receipt(sh, id, 2);
    await stepToHead(w);
    await buyer(6).sendTransaction({ to: r.payTo, value: parseEther(eth) });
    const at = askedAt();
    await askAt(sh, r.id, at);
    return { sh, w, r, askedAt: at };
  };

  test('a page opened before the worker stored its address asks all the same: the read waits for the address and finds the ETH sent to it', async () => {
    const sh = await shop();
    const w = new ChainWorker({ db: db(), chain: f.tc.chain, logger: testLogger(), confirmations: 1, platformRecipient: PLATFORM, startBlock: 0n });
    await stepToHead(w);
    // The page, still open a minute after the receipt was made, loads again: it asks for a read.
    const search = await postReceipt(f.t, sh, 'asked-before-stored', 2);
    await db().update(receipts).set({ createdAt: Date.now() - PAGE_CHECK_EVERY_MS - 1 }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'asked-before-stored')));
    const r = { id: 'asked-before-stored', payTo: (await f.t.call(null, 'GET', `/api/pay/asked-before-stored${search}`)).body.payment.payTo as Hex };
    const asked = await row(sh, r.id);
    assert.equal(asked.payAddress, null, 'the page opened before the address was stored');
    assert.ok(asked.balancesCheckDue !== null, 'the page asked for a read');
    // The buyer sends ETH to the address the page showed, in a block made after the ask.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await buyer(6).sendTransaction({ to: r.payTo, value: parseEther('0.03') });
    await step(w);
    const read = await row(sh, r.id);
    assert.equal(read.payAddress, r.payTo.toLowerCase(), 'stored by the pass');
    assert.equal(read.balancesCheckDue, null, 'and read by it');
    assert.deepEqual(read.otherMoney, { [zeroAddress]: parseEther('0.03').toString() }, 'the ETH was found');
  });

  test('runs only at a block stamped at or after the ask: a head older than it never marks the read done; the next block shows the ETH', async () => {
    // Asked for after every block the worker knows was made: as when the page's ask lands mid-pass,
    // or a node behind named an older head than the buyer's block.
    const { sh, w, r, askedAt } = await ethThenAsk('asked-after-head', '0.01', () => Date.now() + 1_100);
    await step(w);
    assert.equal((await row(sh, r.id)).balancesCheckDue, askedAt, 'not read at a head made before the ask');
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    await anvil().mine({ blocks: 1 });
    await step(w);
    const read = await row(sh, r.id);
    assert.equal(read.balancesCheckDue, null, 'read at the first block made after the ask');
    assert.deepEqual(read.otherMoney, { [zeroAddress]: parseEther('0.01').toString() }, 'the ETH was found');
  });

  test('the reads are spare work of the rate budget: held back after a 429, a read stays asked for and runs once the budget has room', async () => {
    const { sh, r } = await ethThenAsk('asked-held-back', '0.04', () => Date.now());
    const budget = new RpcBudget(null);
    const publicClient: ChainPublicClient = createPublicClient({ chain: f.tc.chain.publicClient.chain, transport: budget.transport(f.tc.chain.rpcUrl, 10_000) });
    const chain: ChainDeps = { ...f.tc.chain, publicClient, rpcBudget: budget };
    const at = async () => ({ now: Date.now(), block: await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 }), blockTime: Date.now(), waitMs: stampWaitMs(undefined) });
    budget.afterResponse(429);
    assert.equal(await checkRequestedBalances(db(), chain, [], await at(), testLogger()), 0, 'held back');
    assert.ok(budget.counts.heldBack >= 1);
    assert.ok((await row(sh, r.id)).balancesCheckDue !== null, 'still asked for');
    await new Promise((resolve) => setTimeout(resolve, HOLD_MS + 100));
    assert.ok((await checkRequestedBalances(db(), chain, [], await at(), testLogger())) >= 1, 'run once the hold is over');
    const read = await row(sh, r.id);
    assert.equal(read.balancesCheckDue, null);
    assert.deepEqual(read.otherMoney, { [zeroAddress]: parseEther('0.04').toString() });
  });

  test('runs at the newest head once stampWaitMs passed with no block stamped after the ask (a quiet chain, or one whose clock is behind)', async () => {
    const { sh, w, r, askedAt } = await ethThenAsk('asked-chain-behind', '0.02', () => Date.now() + 60_000);
    await w.pass(askedAt + stampWaitMs(undefined) - 1);
    assert.equal((await row(sh, r.id)).balancesCheckDue, askedAt, 'still waiting for a later block');
    await w.pass(askedAt + stampWaitMs(undefined) + 1);
    const read = await row(sh, r.id);
    assert.equal(read.balancesCheckDue, null, 'read at the newest head');
    assert.deepEqual(read.otherMoney, { [zeroAddress]: parseEther('0.02').toString() });
  });
});
