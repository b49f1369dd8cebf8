/**
 * Money that reached a payment address before the address was stored, looked for through a
 * provider whose node is behind (src/payments/early-money.ts). Such a node answers eth_getLogs
 * silently cut at its own head, so a payment in the newest blocks before the scanner's cursor is
 * missing from its answer. The look must then fail and try again next pass, never mark the address
 * as looked at with the payment uncredited; through a node that has the blocks it credits exactly
 * what arrived.
 *
 * The provider is the simulation's proxy (test/sim/proxy.ts) with every eth_getLogs answered by a
 * node three blocks behind and every other call by one at the head, so the balance reads (pinned)
 * succeed and only the logs are cut. With the provider's rate limit, the looks are spare work that
 * yields to the chain's own calls (src/chain/rpc-budget.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq, isNotNull, isNull, ne } from 'drizzle-orm';
import { createPublicClient, erc20Abi, http, type Hex } from 'viem';
import type { ChainDeps, ChainPublicClient } from '../../src/chain/client.ts';
import { paymentSalt, predictPaymentAddress } from '../../src/chain/payment-address.ts';
import { RpcBudget } from '../../src/chain/rpc-budget.ts';
import { receipts, receiptTransfers } from '../../src/db/schema.ts';
import { creditEarlyMoney } from '../../src/payments/early-money.ts';
import { fillPayAddresses } from '../../src/payments/pay-address.ts';
import { startProviderProxy, type ProviderProxy } from '../sim/proxy.ts';
import { deployShop, devWallet, PLATFORM, postReceipt, testLogger, useChainApp } from './helpers.ts';

const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });
let proxy: ProviderProxy;

/** The app's chain, read through the lagging provider. */
function lagging(): ChainDeps {
  const publicClient = createPublicClient({ chain: f.tc.chain.publicClient.chain, transport: http(proxy.url) }) as ChainPublicClient;
  return { ...f.tc.chain, publicClient };
}

/**
 * Twelve new receipts of a new shop, their addresses stored and not yet looked at, and the only
 * ones left so (every other address is marked looked at); `looked` counts those looked at since.
 */
async function twelveToLookAt(prefix: string) {
  const { tc, t } = f;
  const db = t.deps.database.db;
  const sh = await deployShop(t);
  const ids = Array.from({ length: 12 }, (_, i) => `${prefix}-${i}`);
  for (const id of ids) await postReceipt(t, sh, id, 2);
  await db.transaction((tx) => fillPayAddresses(tx, tc.chain.paymentFactory!));
  await db.update(receipts).set({ earlyMoneyCheckedAt: Date.now() }).where(and(isNotNull(receipts.payAddress), isNull(receipts.earlyMoneyCheckedAt), ne(receipts.wallet, sh.wallet)));
  const looked = async () => (await db.select({ id: receipts.id }).from(receipts).where(and(eq(receipts.wallet, sh.wallet), isNotNull(receipts.earlyMoneyCheckedAt)))).length;
  return { db, ids, looked };
}

describe('early money through a node behind', () => {
  before(async () => {
    proxy = await startProviderProxy({
      upstream: f.tc.chain.rpcUrl,
      behaviour: { latencyMs: null, rateLimitPerSecond: null, serverErrorShare: 0, getLogsMaxResults: null, getLogsMaxBlocks: null, lag: { share: 1, minBlocks: 3, maxBlocks: 3, methods: ['eth_getLogs'] } },
    });
  });
  after(async () => {
    await proxy?.close();
  });

  test('a payment in the newest blocks, cut from the logs, leaves the address unlooked-at; a node with the blocks credits exactly it', async () => {
    const { tc, t, worker } = f;
    const db = t.deps.database.db;
    const sh = await deployShop(t);
    const id = 'early-lag';
    const payTo = predictPaymentAddress({ factory: tc.chain.paymentFactory!, split: sh.split, salt: paymentSalt(sh.wallet, id) }).toLowerCase() as Hex;
    const hash = await devWallet(tc, 5).writeContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [payTo, 5_000_000n] });
    const paid = await tc.chain.publicClient.waitForTransactionReceipt({ hash });
    assert.equal(paid.status, 'success');
    // The scanner reads the payment's block while the address is unknown: the transfer is passed over.
    await worker.pass();
    assert.ok(worker.lastPass!.head >= paid.blockNumber, 'the cursor is at or past the payment');
    await postReceipt(t, sh, id, 5);
    await db.transaction((tx) => fillPayAddresses(tx, tc.chain.paymentFactory!));
    const row = async () => (await db.select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id))))[0]!;
    assert.equal((await row()).payAddress, payTo, 'stored with the address the buyer paid');
    const transfers = () => db.select().from(receiptTransfers).where(and(eq(receiptTransfers.wallet, sh.wallet), eq(receiptTransfers.receiptId, id)));

    const behind = await creditEarlyMoney({ db, chain: lagging(), logger: testLogger() });
    assert.deepEqual(behind.credited, []);
    assert.ok(proxy.stats().laggedAnswers > 0, 'the logs came from the node behind');
    assert.equal((await row()).earlyMoneyCheckedAt, null, 'not marked as looked at: the next pass looks again');
    assert.deepEqual(await transfers(), []);

    proxy.configure({ lag: null });
    const caughtUp = await creditEarlyMoney({ db, chain: lagging(), logger: testLogger() });
    assert.deepEqual(caughtUp.credited, [{ wallet: sh.wallet, receiptId: id }]);
    assert.ok((await row()).earlyMoneyCheckedAt !== null, 'looked at once it was complete');
    const found = await transfers();
    assert.deepEqual(
      found.map((x) => [x.kind, x.amountUnits, x.transactionHash]),
      [['in', '5000000', hash.toLowerCase()]],
    );
  });

  test("the provider's rate limit met ends the pass's looks: the rest wait for the next pass instead of spending the limit", async () => {
    const { db, ids, looked } = await twelveToLookAt('early-limit');
    proxy.configure({ lag: null, rateLimitPerSecond: 2 });
    proxy.resetStats();
    // No transport retries, so each call meets the limit at most once.
    const limitedClient = { ...f.tc.chain, publicClient: createPublicClient({ chain: f.tc.chain.publicClient.chain, transport: http(proxy.url, { retryCount: 0 }) }) as ChainPublicClient };
    await creditEarlyMoney({ db, chain: limitedClient, logger: testLogger() });
    const stats = proxy.stats();
    assert.ok(stats.rateLimited.requests >= 1, 'the limit was met');
    // A look at an empty address is one balance read; four are made at once.
    assert.ok(stats.rateLimited.requests <= 4, `no look started after the limit was met: ${stats.rateLimited.requests} refused`);
    const first = await looked();
    assert.ok(first < ids.length, `the rest wait: ${first} of ${ids.length} looked at`);
    proxy.configure({ rateLimitPerSecond: null });
    for (let pass = 0; pass < 5 && (await looked()) < ids.length; pass++) await creditEarlyMoney({ db, chain: limitedClient, logger: testLogger() });
    assert.equal(await looked(), ids.length, 'later passes look at every address');
  });

  test('with the rate budget (RPC_RATE_LIMIT) the looks keep to half of it: the chain’s own calls made meanwhile meet no 429, and later passes look at every address', async () => {
    const { tc } = f;
    const { db, ids, looked } = await twelveToLookAt('early-budget');
    const PER_SECOND = 6;
    // A full bucket at the provider and at the service.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    proxy.configure({ lag: null, rateLimitPerSecond: PER_SECOND });
    proxy.resetStats();
    const budget = new RpcBudget(PER_SECOND);
    const publicClient: ChainPublicClient = createPublicClient({ chain: tc.chain.publicClient.chain, transport: budget.transport(proxy.url, 10_000) });
    const chain: ChainDeps = { ...tc.chain, publicClient, rpcBudget: budget };
    // The looks, and at the same time the reads of the chain's own work (a pass's head, a sweep's balance).
    const own = () => publicClient.getBlockNumber({ cacheTime: 0 });
    await Promise.all([creditEarlyMoney({ db, chain, logger: testLogger() }), own(), own(), own()]);
    assert.equal(proxy.stats().rateLimited.requests, 0, 'no call met the provider’s limit');
    assert.ok(budget.counts.heldBack >= 1, 'looks were held back');
    const first = await looked();
    assert.ok(first >= 1 && first <= PER_SECOND / 2, `the looks took at most half the budget: ${first} of ${ids.length}`);
    for (let pass = 0; pass < 12 && (await looked()) < ids.length; pass++) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await Promise.all([creditEarlyMoney({ db, chain, logger: testLogger() }), own()]);
    }
    assert.equal(await looked(), ids.length, 'later passes look at every address');
    assert.equal(proxy.stats().rateLimited.requests, 0);
    proxy.configure({ rateLimitPerSecond: null });
  });
});
