/**
 * Reorganisations on the real dev chain, made on the anvil node's own port (anvil_reorg), never
 * through /dev/rpc. The chain worker runs with CONFIRMATIONS=3 and is driven pass by pass. After
 * every reorganisation, each receipt's amount paid and the merchant's split transactions must
 * equal what the chain that won says, to the base unit.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { encodeFunctionData, erc20Abi, getAbiItem, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { receiptStatusHistory, receiptTransfers } from '../../src/db/schema.ts';
import { reconcileSplits } from '../../src/payments/reconcile.ts';
import { sweepsOf } from '../../src/payments/sweeper.ts';
import { anvilClient, deployShop, devWallet, PLATFORM, receiptPayTo, type Shop, useChainApp } from './helpers.ts';
import { staleReceiptViews, unrenderedReceipts } from '../helpers/receipt-views.ts';

const f = useChainApp({ CONFIRMATIONS: '3', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });

const anvil = () => anvilClient(f.tc);
const buyer = (i: number) => devWallet(f.tc, i);
const usdc = () => f.tc.chain.usdc.address;
const TRANSFER = getAbiItem({ abi: erc20Abi, name: 'Transfer' });

const shop = (): Promise<Shop> => deployShop(f.t);

const receipt = (sh: Shop, id: string, totalUsd: number): Promise<Hex> => receiptPayTo(f.t, sh, id, totalUsd);

const transferData = (to: Hex, amount: bigint) => encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] });

async function pay(from: number, to: Hex, amount: bigint): Promise<{ hash: Hex; block: bigint; nonce: number }> {
  const nonce = await f.tc.chain.publicClient.getTransactionCount({ address: devAccount(from).address, blockTag: 'pending' });
  const hash = await buyer(from).sendTransaction({ to: usdc(), data: transferData(to, amount), nonce });
  const mined = await f.tc.chain.publicClient.waitForTransactionReceipt({ hash });
  return { hash, block: mined.blockNumber, nonce };
}

/** anvil_reorg: replaces the newest `depth` blocks; `txs` go into the new ones at their offsets. */
async function reorg(depth: bigint, txs: [unknown, number][] = []): Promise<void> {
  await anvil().request({ method: 'anvil_reorg' as never, params: [Number(depth), txs] as never });
}

async function passes(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await f.worker.pass();
}

async function detail(sh: Shop, id: string) {
  const res = await f.t.call(sh.key, 'GET', `/api/receipts/${id}`);
  assert.equal(res.status, 200);
  return res.body;
}

/** The token the chain says reached an address, summed over every Transfer into it. */
async function receivedOnChain(to: Hex): Promise<bigint> {
  const logs = await f.tc.chain.publicClient.getLogs({ address: usdc(), event: TRANSFER, args: { to }, fromBlock: 0n, toBlock: 'latest' });
  return logs.reduce((s, l) => s + (l.args.value ?? 0n), 0n);
}

/** Receipts' amounts paid and the split transactions equal the chain, to the base unit. */
async function assertMatchesChain(sh: Shop, receipts: Record<string, Hex>): Promise<void> {
  for (const [id, payTo] of Object.entries(receipts)) {
    assert.equal(BigInt((await detail(sh, id)).amountPaid), await receivedOnChain(payTo), `${id}: amount paid equals the chain`);
    const rows = await f.t.deps.database.db
      .select({ hash: receiptTransfers.transactionHash, logIndex: receiptTransfers.logIndex, block: receiptTransfers.blockNumber, blockHash: receiptTransfers.blockHash })
      .from(receiptTransfers)
      .where(and(eq(receiptTransfers.wallet, sh.wallet), eq(receiptTransfers.receiptId, id), eq(receiptTransfers.kind, 'in')));
    for (const r of rows) {
      const mined = await f.tc.chain.publicClient.getTransactionReceipt({ hash: r.hash as Hex });
      assert.equal(mined.blockHash.toLowerCase(), r.blockHash, `${id}: the transfer row names the block the chain has`);
      assert.equal(mined.blockNumber, r.block);
      assert.ok(mined.logs.some((l) => l.logIndex === r.logIndex && l.address.toLowerCase() === usdc().toLowerCase()), `${id}: and its log index`);
    }
  }
  const indexed = (await f.t.call(sh.key, 'GET', `/api/split/transactions?address=${sh.split}`)).body as { amountBaseUnits: string; status: string }[];
  const indexedIn = indexed.filter((x) => x.status === 'received').reduce((s, x) => s + BigInt(x.amountBaseUnits), 0n);
  assert.equal(indexedIn, await receivedOnChain(sh.split), 'indexed split payments equal what the split received');
  // And the reconciliation the CLI runs (npm run cli -- reconcile) finds no difference.
  const report = await reconcileSplits({ db: f.t.deps.database.db, chain: f.tc.chain, wallet: sh.wallet });
  assert.equal(report.splits.length, 1);
  assert.ok(report.ok, JSON.stringify(report.splits, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
}

describe('reorganisations', () => {
  test('a payment replaced at the same nonce by a payment to another receipt: the first goes back to pending, the second completes', async () => {
    const sh = await shop();
    const first = await receipt(sh, 'nonce-a', 4);
    const second = await receipt(sh, 'nonce-b', 4);
    const paid = await pay(1, first, 4_000_000n);
    await passes(2);
    assert.equal((await detail(sh, 'nonce-a')).status, 'recipient_validated', 'covered and swept, not yet 3 deep');
    await assertMatchesChain(sh, { 'nonce-a': first, 'nonce-b': second });

    const head = await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    await reorg(head - paid.block + 1n, [[{ from: devAccount(1).address, to: usdc(), data: transferData(second, 4_000_000n), nonce: paid.nonce }, 0]]);
    const replaced = await f.tc.chain.publicClient.getTransactionReceipt({ hash: paid.hash }).catch(() => null);
    assert.equal(replaced, null, 'the first payment is gone from the chain');
    await passes(3);
    const a = await detail(sh, 'nonce-a');
    assert.equal(a.status, 'pending');
    assert.equal(a.amountPaid, '0');
    await anvil().mine({ blocks: 3 });
    await passes(3);
    const b = await detail(sh, 'nonce-b');
    assert.equal(b.status, 'completed');
    assert.equal(b.amountPaid, '4000000');
    await assertMatchesChain(sh, { 'nonce-a': first, 'nonce-b': second });
  });

  test('a payment moved to another block and log index is followed there', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'moved-1', 3);
    const paid = await pay(2, payTo, 3_000_000n);
    await passes(2);
    const found: unknown = await anvil().request({ method: 'eth_getRawTransactionByHash' as never, params: [paid.hash] as never });
    const raw = found as Hex;
    const head = await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    // The same signed transaction, one block later, after another transfer in the same block.
    await reorg(head - paid.block + 1n, [
      [{ from: devAccount(3).address, to: usdc(), data: transferData(devAccount(4).address, 1n) }, 1],
      [raw, 1],
    ]);
    const moved = await f.tc.chain.publicClient.getTransactionReceipt({ hash: paid.hash });
    assert.equal(moved.blockNumber, paid.block + 1n, 'the payment now sits one block later');
    await passes(3);
    await anvil().mine({ blocks: 3 });
    await passes(3);
    assert.equal((await detail(sh, 'moved-1')).status, 'completed');
    await assertMatchesChain(sh, { 'moved-1': payTo });
  });

  test('a sweep whose block a reorganisation removed is sent again with its nonce: later sweeps are mined, no gap is left', async () => {
    const sh = await shop();
    const first = await receipt(sh, 'swept-gone-1', 2);
    await pay(6, first, 2_000_000n);
    await passes(2);
    for (let i = 0; i < 5 && (await sweepsOf(f.t.deps.database.db, first))[0]?.state !== 'mined'; i++) await passes(1);
    const [sweep] = await sweepsOf(f.t.deps.database.db, first);
    assert.equal(sweep?.state, 'mined', 'the first sweep is mined and recorded');
    const sweepBlock = sweep.minedBlock!;
    const head = await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    // Only the block holding the sweep (and any after it) is replaced, by empty blocks.
    await reorg(head - sweepBlock + 1n);
    const gone = await f.tc.chain.publicClient.getTransactionReceipt({ hash: sweep.minedHash as Hex }).catch(() => null);
    assert.equal(gone, null, 'the sweep is gone from the chain');
    const service = f.tc.chain.walletClient!.account.address;
    assert.ok(BigInt(await f.tc.chain.publicClient.getTransactionCount({ address: service, blockTag: 'latest' })) <= sweep.nonce, "the chain counts the sweep's nonce unused again");

    // Another receipt is paid meanwhile: its sweep takes the next nonce, which needs the gap filled.
    const second = await receipt(sh, 'swept-gone-2', 3);
    await pay(7, second, 3_000_000n);
    await passes(3);
    await anvil().mine({ blocks: 3 });
    await passes(3);
    for (const id of ['swept-gone-1', 'swept-gone-2']) assert.equal((await detail(sh, id)).status, 'completed', id);
    const rows = [...(await sweepsOf(f.t.deps.database.db, first)), ...(await sweepsOf(f.t.deps.database.db, second))];
    assert.ok(rows.every((r) => r.state === 'mined'), JSON.stringify(rows.map((r) => [r.nonce.toString(), r.state])));
    assert.equal(rows.filter((r) => r.nonce === sweep.nonce).length, 1, 'the removed sweep was sent again with its own nonce, not a new one');
    const latest = BigInt(await f.tc.chain.publicClient.getTransactionCount({ address: service, blockTag: 'latest' }));
    assert.ok(rows.every((r) => r.nonce < latest), 'every sweep nonce is mined: no gap below the next one');
    assert.equal(await receivedOnChain(first), 2_000_000n);
    await assertMatchesChain(sh, { 'swept-gone-1': first, 'swept-gone-2': second });
  });

  test('a reorganisation deeper than the confirmations after completion is logged and shown, not rewritten silently', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'deep-1', 5);
    const paid = await pay(5, payTo, 5_000_000n);
    await passes(2);
    await anvil().mine({ blocks: 3 });
    await passes(2);
    assert.equal((await detail(sh, 'deep-1')).status, 'completed');
    const head = await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    await reorg(head - paid.block + 1n);
    await passes(2);
    const after = await detail(sh, 'deep-1');
    assert.equal(after.status, 'completed', 'a completed receipt is not moved back');
    assert.equal(after.amountPaid, '0', 'but its figures are what the chain says');
    const notes = await f.t.deps.database.db
      .select({ note: receiptStatusHistory.note })
      .from(receiptStatusHistory)
      .where(and(eq(receiptStatusHistory.wallet, sh.wallet), eq(receiptStatusHistory.receiptId, 'deep-1')));
    assert.ok(notes.some((n) => n.note?.includes('deeper than the confirmation depth')), 'the merchant is told in the history');
    await assertMatchesChain(sh, { 'deep-1': payTo });
  });
});

test('every receipt these tests wrote stores the views the database renders from its rows', async () => {
  assert.deepEqual(await staleReceiptViews(f.t.deps.database.db), []);
  assert.deepEqual(await unrenderedReceipts(f.t.deps.database.db), []);
});
