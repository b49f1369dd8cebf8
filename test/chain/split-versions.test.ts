/**
 * Split versions on the real dev chain (DESIGN.md "Recipients: split versions"): a version change
 * mid-stream keeps every old receipt's money going to its own split. A receipt created before the
 * change and paid after it is swept into the old split; one created after, into the new one. The
 * settlement and the balances cover both versions and equal the chain to the base unit; the
 * indexer lists both splits' transactions; a retried version POST deploys nothing.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { erc20Abi, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import { receipts, splitTransactions } from '../../src/db/schema.ts';
import { admin, signIn } from '../helpers/session.ts';
import { until } from '../helpers/wait.ts';
import { CHAIN_WAIT_MS, devWallet, PLATFORM, postReceipt, startChainApp, useChainApp } from './helpers.ts';

const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });

const usdc = () => f.tc.chain.usdc.address;
const stranger = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Hex;

async function transfer(to: Hex, amount: bigint): Promise<void> {
  const hash = await devWallet(f.tc, 0).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [to, amount], gas: 100_000n });
  assert.equal((await f.tc.chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');
}
const balanceOf = (a: Hex, blockNumber?: bigint) => f.tc.chain.publicClient.readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [a], blockNumber });

/** What the indexer holds as payments into `split`. */
async function indexedInto(split: Hex): Promise<bigint> {
  const rows = await f.t.deps.database.db.select().from(splitTransactions).where(eq(splitTransactions.splitAddress, split));
  return rows.filter((r) => r.kind === 'payment').reduce((a, r) => a + BigInt(r.amountUnits), 0n);
}

/** The payment page of a receipt: where to pay, and the split it sweeps into. */
async function page(id: string, search: string): Promise<{ payTo: Hex; splitAddress: Hex }> {
  const res = await f.t.call(null, 'GET', `/api/pay/${id}${search}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.payment;
}

describe('split versions on the dev chain', () => {
  before(() => f.t.deps.startWorkers());

  test("a version change mid-stream: each receipt's money goes to the split it was created under; settlement and balances cover both, equal to the chain", async () => {
    const s = await signIn(f.t);
    const [a, b] = [stranger(), stranger()];
    const v1Recipients = [{ address: a, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }];
    const v2Recipients = [{ address: a, sharesBps: 4001 }, { address: b, sharesBps: 5949 }, { address: PLATFORM, sharesBps: 50 }];
    const deployed = await admin(f.t, s, 'POST', '/api/split/deploy', { recipients: v1Recipients });
    assert.equal(deployed.status, 200, JSON.stringify(deployed.body));
    const v1 = deployed.body.split.address as Hex;
    assert.equal(deployed.body.split.version, 1);
    const sh = { s, wallet: s.wallet, key: await f.t.key(s.wallet), split: v1 };

    // Before the change: one receipt paid at once, one created and left unpaid.
    const paidEarly = await postReceipt(f.t, sh, 'v-early', 3.21);
    await transfer((await page('v-early', paidEarly)).payTo, 3_210_000n);
    const lateSearch = await postReceipt(f.t, sh, 'v-late', 4.56);
    const late = await page('v-late', lateSearch);
    assert.equal(late.splitAddress, v1);
    await until(async () => (await indexedInto(v1)) === 3_210_000n, CHAIN_WAIT_MS, 'the early receipt to be swept into version 1');

    // The change: the service deploys version 2 for the new recipients.
    const made = await admin(f.t, s, 'POST', '/api/admin/split/versions', { recipients: v2Recipients });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const v2 = made.body.version.address as Hex;
    assert.equal(made.body.version.version, 2);
    assert.notEqual(v2, v1);
    const code = await f.tc.chain.publicClient.getCode({ address: v2 });
    assert.ok(code !== undefined && code.length > 2, 'version 2 is a deployed contract');
    const key = await f.t.key(s.wallet, { scopes: ['split:read'] });
    const current = await f.t.call(key, 'GET', '/api/split/deploy');
    assert.deepEqual(current.body.split, { address: v2, recipients: v2Recipients, version: 2 });

    // A retry with the same recipients deploys nothing: the same version, the deployer's nonce unchanged.
    const deployerAddress = f.tc.chain.walletClient!.account.address;
    const nonce = await f.tc.chain.publicClient.getTransactionCount({ address: deployerAddress, blockTag: 'pending' });
    const retry = await admin(f.t, s, 'POST', '/api/admin/split/versions', { recipients: [...v2Recipients].reverse() });
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.equal(retry.body.idempotent, true);
    assert.deepEqual(retry.body.version, made.body.version);
    assert.equal(await f.tc.chain.publicClient.getTransactionCount({ address: deployerAddress, blockTag: 'pending' }), nonce, 'no deployment was sent');

    // After the change: the old receipt's page is unchanged; a new receipt pays into version 2.
    const lateAgain = await page('v-late', lateSearch);
    assert.deepEqual([lateAgain.payTo, lateAgain.splitAddress], [late.payTo, v1], 'the old receipt keeps its address and split');
    const freshSearch = await postReceipt(f.t, sh, 'v-fresh', 7.89);
    const fresh = await page('v-fresh', freshSearch);
    assert.equal(fresh.splitAddress, v2);
    assert.notEqual(fresh.payTo, late.payTo);

    await transfer(late.payTo, 4_560_000n);
    await transfer(fresh.payTo, 7_890_000n);
    await until(async () => (await indexedInto(v1)) === 7_770_000n && (await indexedInto(v2)) === 7_890_000n, CHAIN_WAIT_MS, 'both receipts to be swept, each into its own split');
    assert.equal(await balanceOf(v1), 7_770_000n, 'the receipt created before the change was swept into version 1');
    assert.equal(await balanceOf(v2), 7_890_000n, 'the receipt created after it, into version 2');
    const stored = await f.t.deps.database.db.select({ id: receipts.id, paySplit: receipts.paySplit }).from(receipts).where(eq(receipts.wallet, s.wallet));
    assert.deepEqual(new Map(stored.map((r) => [r.id, r.paySplit])), new Map([['v-early', v1], ['v-late', v1], ['v-fresh', v2]]));

    // A release from the old split, by anyone.
    const hash = await devWallet(f.tc, 1).writeContract({ address: v1, abi: paymentSplitterAbi, functionName: 'release', args: [usdc(), a] });
    assert.equal((await f.tc.chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');
    await until(async () => {
      const rows = await f.t.deps.database.db.select().from(splitTransactions).where(eq(splitTransactions.splitAddress, v1));
      return rows.some((r) => r.kind === 'release');
    }, CHAIN_WAIT_MS, 'the release from version 1 to be indexed');

    // Split transactions: both splits' payments, and the release.
    const txs = await f.t.call(key, 'GET', '/api/split/transactions');
    assert.equal(txs.status, 200);
    assert.deepEqual(
      txs.body.filter((x: any) => x.status === 'received').map((x: any) => x.amountBaseUnits).sort(),
      ['3210000', '4560000', '7890000'],
    );
    assert.equal(txs.body.filter((x: any) => x.status === 'released').length, 1);

    // Settlement: three lines, each naming its split; every recipient's figures equal both contracts together.
    const report = await f.t.call(key, 'GET', '/api/split/settlements');
    assert.equal(report.status, 200, JSON.stringify(report.body));
    const r = report.body;
    assert.equal(r.split, v2);
    assert.deepEqual(r.versions.map((v: any) => [v.version, v.split]), [[1, v1], [2, v2]]);
    // In chain order; the sweeper may send the two later sweeps in either order.
    const byBlock = r.lines.map((l: any) => [BigInt(l.blockNumber), l.logIndex]);
    assert.deepEqual(byBlock, [...byBlock].sort((x: any, y: any) => (x[0] === y[0] ? x[1] - y[1] : x[0] < y[0] ? -1 : 1)), 'lines in chain order');
    assert.deepEqual(r.lines.map((l: any) => [l.receiptId, l.version, l.split, l.gross]).sort(), [
      ['v-early', 1, v1, '3210000'],
      ['v-fresh', 2, v2, '7890000'],
      ['v-late', 1, v1, '4560000'],
    ]);
    assert.deepEqual(r.recipients.map((x: any) => [x.address, x.sharesBps]), [[a, 4001], [b, 5949], [PLATFORM, 50]]);
    for (const l of r.lines) assert.equal(l.shares.reduce((s2: bigint, x: string) => s2 + BigInt(x), 0n) + BigInt(l.unallocated), BigInt(l.gross));
    const toBlock = BigInt(r.toBlock);
    for (const x of r.recipients) {
      let owed = 0n;
      let released = 0n;
      for (const split of [v1, v2]) {
        const at = { address: split, blockNumber: toBlock } as const;
        const args = [usdc(), x.address as Hex] as const;
        const rel = await f.tc.chain.publicClient.readContract({ ...at, abi: paymentSplitterAbi, functionName: 'released', args });
        const able = await f.tc.chain.publicClient.readContract({ ...at, abi: paymentSplitterAbi, functionName: 'releasable', args });
        owed += rel + able;
        released += rel;
      }
      assert.equal(BigInt(x.accrued), owed, `${x.address}: accrued = Σ over versions of released + releasable`);
      assert.equal(BigInt(x.releasedToDate), released, `${x.address}: released to date over both versions`);
      assert.equal(BigInt(x.share), owed, `${x.address}: the whole history's shares are what both contracts owe`);
    }
    assert.equal(r.recipients[1].share, String((7_890_000n * 5949n) / 10_000n), 'b is owed by version 2 alone');
    assert.equal(BigInt(r.totals.gross), (await balanceOf(v1, toBlock)) + (await balanceOf(v2, toBlock)) + BigInt(r.recipients[0].releasedToDate));

    // Balances: the current version at the top level, and both versions, as the contracts say.
    const balances = await f.t.call(key, 'GET', '/api/split/balances');
    assert.equal(balances.status, 200, JSON.stringify(balances.body));
    assert.equal(balances.body.split, v2);
    assert.equal(balances.body.version, 2);
    assert.deepEqual(balances.body.versions.map((v: any) => [v.version, v.split]), [[2, v2], [1, v1]]);
    const received = (v: any) => v.recipients.reduce((s2: bigint, x: any) => s2 + BigInt(x.received), 0n);
    assert.ok(received(balances.body.versions[0]) <= 7_890_000n && 7_890_000n - received(balances.body.versions[0]) < 3n);
    assert.ok(received(balances.body.versions[1]) <= 7_770_000n && 7_770_000n - received(balances.body.versions[1]) < 2n);
    const aOld = balances.body.versions[1].recipients.find((x: any) => x.address === a);
    assert.equal(BigInt(aOld.released), (7_770_000n * 9950n) / 10_000n, 'the release from version 1 paid a all it was owed there');
    const adminBalances = await admin(f.t, s, 'GET', '/api/admin/split/balances');
    assert.equal(adminBalances.status, 200, JSON.stringify(adminBalances.body));
    assert.deepEqual(adminBalances.body.versions.map((v: any) => [v.version, v.address, v.totalReceived]), [[2, v2, '7890000'], [1, v1, '7770000']]);
  });

  test('server-paid version deployments follow the same approval as the first split: 403 forbidden for an unapproved wallet, nothing deployed', async () => {
    const t2 = await startChainApp(f.tc.chain, { CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM, SPLIT_DEPLOYS_APPROVED_ONLY: 'true' });
    try {
      const s = await signIn(t2);
      // Its first split from its own wallet (an unapproved wallet may not have the server pay).
      const own = await admin(f.t, await signIn(f.t), 'POST', '/api/split/deploy', { recipients: [{ address: stranger(), sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
      assert.equal(own.status, 200);
      const first = await admin(t2, s, 'POST', '/api/split/deploy', { recipients: [{ address: s.wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
      assert.equal(first.status, 403, JSON.stringify(first.body));
      // Configure it with a contract deployed elsewhere (f.t's split above), then ask the server to deploy a version.
      const verified = await admin(t2, s, 'POST', '/api/split/deploy', { splitAddress: own.body.split.address, recipients: own.body.split.recipients });
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      const refused = await admin(t2, s, 'POST', '/api/admin/split/versions', { recipients: [{ address: stranger(), sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
      assert.equal(refused.body.error, 'forbidden');
      const list = await admin(t2, s, 'GET', '/api/admin/split/versions');
      assert.equal(list.body.versions.length, 1);
    } finally {
      await t2.close();
    }
  });
});
