/**
 * Refunds verified at depth and withdrawn by reorganisations (DESIGN "Refunds"), on the real dev
 * chain with CONFIRMATIONS=3, the chain worker driven pass by pass and reorganisations made on
 * anvil's own port (anvil_reorg), never through /dev/rpc:
 *
 * - a refund whose transfer is fewer than 3 blocks deep is recorded `confirming`, not verified;
 *   at depth the worker verifies it and sends receipt.refund_verified;
 * - a reorganisation that removes the transfer withdraws `verified` (`removed`) and sends
 *   receipt.refund_unverified; the transfer mined again is confirming again, then verified again;
 * - the transfer keeps proving that refund alone wherever it is mined.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { createWalletClient, erc20Abi, http, type Address, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { testUsdcAbi } from '../../src/chain/test-usdc.ts';
import { webhookEvents } from '../../src/db/schema.ts';
import { admin } from '../helpers/session.ts';
import { staleReceiptViews, unrenderedReceipts } from '../helpers/receipt-views.ts';
import { anvilClient, deployShop, devWallet, PLATFORM, postReceipt, useChainApp, type Shop } from './helpers.ts';

const file = useChainApp({ CONFIRMATIONS: '3', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });

const anvil = () => anvilClient(file.tc);
const pub = () => file.tc.chain.publicClient;
const BUYER = devAccount(2).address.toLowerCase();

/** A merchant with a split, whose own wallet holds ETH and test USDC to refund from. */
async function shop(): Promise<Shop> {
  const sh = await deployShop(file.t);
  await anvil().setBalance({ address: sh.s.account.address, value: 10n ** 19n });
  const hash = await devWallet(file.tc, 4).writeContract({ address: file.tc.chain.usdc.address, abi: testUsdcAbi, functionName: 'mint', args: [sh.s.account.address, 10n ** 12n] });
  await pub().waitForTransactionReceipt({ hash });
  return sh;
}

/** `amount` base units from the merchant's own wallet to the buyer; its hash and block. */
async function refundTransfer(sh: Shop, amount: bigint): Promise<{ hash: Hex; block: bigint }> {
  const merchant = createWalletClient({ chain: pub().chain, transport: http(file.tc.chain.rpcUrl), account: sh.s.account });
  const hash = await merchant.writeContract({ address: file.tc.chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [BUYER as Address, amount] });
  const mined = await pub().waitForTransactionReceipt({ hash });
  assert.equal(mined.status, 'success');
  return { hash, block: mined.blockNumber };
}

const refund = (sh: Shop, receiptId: string, usd: number, txHash: Hex) =>
  admin(file.t, sh.s, 'POST', '/api/receipts/refund', { receiptId, wallet: sh.s.wallet, buyer: BUYER, usd, txHash });

async function passes(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await file.worker.pass();
}

/** The refund as the receipt detail and the refund list show it: [verified, verification] each. */
async function shown(sh: Shop, id: string): Promise<[boolean, string][]> {
  const detail = await file.t.call(sh.key, 'GET', `/api/receipts/${id}`);
  assert.equal(detail.status, 200);
  const list = await admin(file.t, sh.s, 'GET', `/api/receipts/${id}/refunds`);
  assert.equal(list.status, 200);
  const a = detail.body.refunds.map((r: { verified: boolean; verification: string }) => [r.verified, r.verification]);
  const b = list.body.refunds.map((r: { verified: boolean; verification: string }) => [r.verified, r.verification]);
  assert.deepEqual(a, b, 'the detail and the refund list agree');
  return a;
}

async function events(sh: Shop, id: string, type: string) {
  const rows = await file.t.deps.database.db
    .select({ payload: webhookEvents.payload, createdAt: webhookEvents.createdAt })
    .from(webhookEvents)
    .where(and(eq(webhookEvents.wallet, sh.wallet), eq(webhookEvents.type, type)));
  return rows
    .sort((x, y) => x.createdAt - y.createdAt)
    .map((r) => (r.payload as { data: Record<string, unknown> }).data)
    .filter((d) => d.receiptId === id);
}

describe('refund verification at depth', () => {
  test('confirming until 3 deep, then verified; a reorganisation removes the transfer: unverified and the merchant told; mined again: verified again', async () => {
    const sh = await shop();
    await postReceipt(file.t, sh, 'rd-1', 5);
    await passes(1);
    const sent = await refundTransfer(sh, 2_000_000n);
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    const raw = (await anvil().request({ method: 'eth_getRawTransactionByHash' as never, params: [sent.hash] as never })) as Hex;

    const res = await refund(sh, 'rd-1', 2, sent.hash);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.verified, false, 'one block deep of three: not verified yet');
    assert.equal(res.body.verification, 'confirming');
    assert.deepEqual(await shown(sh, 'rd-1'), [[false, 'confirming']]);
    const recorded = await events(sh, 'rd-1', 'receipt.refund_recorded');
    assert.deepEqual(recorded.map((d) => [d.verified, d.verification]), [[false, 'confirming']]);

    await passes(1);
    assert.deepEqual(await shown(sh, 'rd-1'), [[false, 'confirming']], 'a pass at the same depth changes nothing');
    await anvil().mine({ blocks: 2 });
    await passes(1);
    assert.deepEqual(await shown(sh, 'rd-1'), [[true, 'verified']], 'three deep: verified');
    const verified = await events(sh, 'rd-1', 'receipt.refund_verified');
    assert.equal(verified.length, 1);
    assert.equal(verified[0]!.refundId, res.body.refundId);
    assert.equal(verified[0]!.txHash, sent.hash.toLowerCase());
    assert.equal(verified[0]!.blockNumber, sent.block.toString());
    await passes(1);
    assert.equal((await events(sh, 'rd-1', 'receipt.refund_verified')).length, 1, 'once');

    // A reorganisation replaces the transfer's block and those after it with empty blocks.
    const head = await pub().getBlockNumber({ cacheTime: 0 });
    await anvil().request({ method: 'anvil_reorg' as never, params: [Number(head - sent.block + 1n), []] as never });
    assert.equal(await pub().getTransactionReceipt({ hash: sent.hash }).catch(() => null), null, 'the transfer is gone from the chain');
    await passes(2);
    assert.deepEqual(await shown(sh, 'rd-1'), [[false, 'removed']], 'verified no more');
    const unverified = await events(sh, 'rd-1', 'receipt.refund_unverified');
    assert.equal(unverified.length, 1, 'the merchant is told');
    assert.deepEqual([unverified[0]!.refundId, unverified[0]!.verified, unverified[0]!.verification, unverified[0]!.blockNumber], [res.body.refundId, false, 'removed', null]);
    const detail = (await file.t.call(sh.key, 'GET', '/api/receipts/rd-1')).body;
    assert.equal(detail.refundedUsd, 2, 'an unverified refund is still a refund');
    await passes(1);
    assert.equal((await events(sh, 'rd-1', 'receipt.refund_unverified')).length, 1, 'once');

    // The same signed transfer is mined again: confirming, then verified again at depth.
    await pub().request({ method: 'eth_sendRawTransaction', params: [raw] });
    const again = await pub().waitForTransactionReceipt({ hash: sent.hash });
    assert.notEqual(again.blockHash, undefined);
    await passes(1);
    assert.deepEqual(await shown(sh, 'rd-1'), [[false, 'confirming']]);
    await anvil().mine({ blocks: 2 });
    await passes(1);
    assert.deepEqual(await shown(sh, 'rd-1'), [[true, 'verified']], 'verified again');
    const twice = await events(sh, 'rd-1', 'receipt.refund_verified');
    assert.equal(twice.length, 2, 'and the merchant is told again');
    assert.equal(twice[1]!.blockNumber, again.blockNumber.toString());

    // Wherever it was mined, the transfer proves this refund alone.
    const reuse = await refund(sh, 'rd-1', 2, sent.hash);
    assert.equal(reuse.status, 400);
    assert.equal(reuse.body.reason, 'already_used');
  });

  test('a transfer already 3 deep when the refund is recorded is verified at once, and a reorganisation shallower than its block leaves it verified', async () => {
    const sh = await shop();
    await postReceipt(file.t, sh, 'rd-2', 3);
    const sent = await refundTransfer(sh, 3_000_000n);
    await anvil().mine({ blocks: 3 });
    const res = await refund(sh, 'rd-2', 3, sent.hash);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.verified, res.body.verification, res.body.status], [true, 'verified', 'refunded']);
    await passes(2);
    // The two newest blocks, above the transfer's, are replaced.
    await anvil().request({ method: 'anvil_reorg' as never, params: [2, []] as never });
    await passes(2);
    assert.deepEqual(await shown(sh, 'rd-2'), [[true, 'verified']]);
    assert.deepEqual(await events(sh, 'rd-2', 'receipt.refund_unverified'), []);
    assert.deepEqual(await events(sh, 'rd-2', 'receipt.refund_verified'), [], 'verified when recorded: refund_recorded said so');
  });
});

test('every receipt these tests wrote stores the views the database renders from its rows', async () => {
  assert.deepEqual(await staleReceiptViews(file.t.deps.database.db), []);
  assert.deepEqual(await unrenderedReceipts(file.t.deps.database.db), []);
});
