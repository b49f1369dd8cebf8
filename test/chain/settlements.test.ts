/**
 * GET /api/split/settlements on the real dev chain (DESIGN.md "Recipients: settlements"): receipts
 * paid through their payment addresses (one with a top-up, one overpaid), transfers straight into the split in
 * amounts that round, releases by someone other than the recipient; the report's figures equal
 * the contract's to the base unit at the period's end block, for the whole history, for two
 * periods that split it and after a reorganisation; CSV; every error and auth rule.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { encodeFunctionData, erc20Abi, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import { splitTransactions } from '../../src/db/schema.ts';
import { totalReleasedAbi } from '../../src/payments/split-balances.ts';
import { admin, signIn } from '../helpers/session.ts';
import { until } from '../helpers/wait.ts';
import { anvilClient, CHAIN_WAIT_MS, devWallet, PLATFORM, receiptPayTo, useChainApp } from './helpers.ts';

const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });

const usdc = () => f.tc.chain.usdc.address;
const stranger = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Hex;

async function send(hash: Promise<Hex>): Promise<bigint> {
  const mined = await f.tc.chain.publicClient.waitForTransactionReceipt({ hash: await hash });
  assert.equal(mined.status, 'success');
  return mined.blockNumber;
}
const transfer = (to: Hex, amount: bigint) => send(devWallet(f.tc, 0).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [to, amount], gas: 100_000n }));
const release = (split: Hex, account: Hex) => send(devWallet(f.tc, 1).writeContract({ address: split, abi: paymentSplitterAbi, functionName: 'release', args: [usdc(), account] }));

interface Line {
  receiptId: string | null;
  transactionHash: string;
  logIndex: number;
  blockNumber: string;
  timestamp: number;
  gross: string;
  shares: string[];
  platformFee: string;
  unallocated: string;
}
interface Report {
  split: string | null;
  toBlock: string | null;
  from: number;
  to: number | null;
  recipients: { address: string; sharesBps: number; platform: boolean; share: string; released: string; accrued: string; releasedToDate: string }[];
  lines: Line[];
  totals: { gross: string; platformFee: string; unallocated: string; released: string };
}

/** What the indexer holds for the split: Σ payments and the number of releases. */
async function indexed(split: Hex): Promise<{ received: bigint; releases: number }> {
  const rows = await f.t.deps.database.db.select().from(splitTransactions).where(eq(splitTransactions.splitAddress, split));
  return {
    received: rows.filter((r) => r.kind === 'payment').reduce((a, r) => a + BigInt(r.amountUnits), 0n),
    releases: rows.filter((r) => r.kind === 'release').length,
  };
}

/** Every figure of the report against the contract at its toBlock, to the base unit. */
async function assertEqualsChain(r: Report, split: Hex): Promise<void> {
  assert.ok(r.toBlock !== null);
  const at = { address: split, blockNumber: BigInt(r.toBlock) } as const;
  for (const x of r.recipients) {
    const args = [usdc(), x.address as Hex] as const;
    const released = await f.tc.chain.publicClient.readContract({ ...at, abi: paymentSplitterAbi, functionName: 'released', args });
    const releasable = await f.tc.chain.publicClient.readContract({ ...at, abi: paymentSplitterAbi, functionName: 'releasable', args });
    assert.equal(BigInt(x.accrued), released + releasable, `${x.address}: accrued = released + releasable at block ${r.toBlock}`);
    assert.equal(BigInt(x.releasedToDate), released, `${x.address}: released to date`);
  }
  for (const l of r.lines) {
    assert.equal(l.shares.reduce((a, s) => a + BigInt(s), 0n) + BigInt(l.unallocated), BigInt(l.gross), `line ${l.transactionHash}: shares + unallocated = gross`);
  }
}

async function settlement(key: string, query = ''): Promise<Report> {
  const res = await f.t.call(key, 'GET', `/api/split/settlements${query}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.match(String(res.headers['content-type']), /^application\/json/);
  return res.body;
}

describe('settlements', () => {
  before(() => f.t.deps.startWorkers());

  test('every figure equals the chain to the base unit, for the whole history and for two periods that split it; CSV holds the same lines', async () => {
    const s = await signIn(f.t);
    const partners: [Hex, Hex] = [stranger(), stranger()];
    const deployed = await admin(f.t, s, 'POST', '/api/split/deploy', {
      recipients: [
        { address: partners[0], sharesBps: 6001 },
        { address: partners[1], sharesBps: 3949 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    });
    assert.equal(deployed.status, 200, JSON.stringify(deployed.body));
    const split = deployed.body.split.address as Hex;
    const key = await f.t.key(s.wallet, { scopes: ['split:read'] });
    const sh = { s, wallet: s.wallet.toLowerCase(), key: await f.t.key(s.wallet), split };

    // Before anything: an empty report of this split.
    const empty = await settlement(key);
    assert.equal(empty.split, split);
    assert.deepEqual([empty.lines, empty.toBlock, empty.totals.gross], [[], null, '0']);

    // Period 1: a receipt paid in full, one paid short and topped up, money straight into the split, a release.
    await transfer(await receiptPayTo(f.t, sh, 'settle-a', 12.34), 12_340_000n);
    const payB = await receiptPayTo(f.t, sh, 'settle-b', 5.55);
    await transfer(payB, 2_000_000n);
    await until(async () => (await indexed(split)).received === 14_340_000n, CHAIN_WAIT_MS, 'receipt A and the first part of B to be swept and indexed');
    await transfer(payB, 3_550_000n);
    await transfer(split, 1_000_003n);
    await until(async () => (await indexed(split)).received === 18_890_003n, CHAIN_WAIT_MS, 'the top-up and the direct transfer to be indexed');
    await release(split, partners[0]);
    await until(async () => (await indexed(split)).releases === 1, CHAIN_WAIT_MS, 'the release to be indexed');

    // Period 2, later in chain time: more money that rounds, and the platform paid out.
    await anvilClient(f.tc).increaseTime({ seconds: 10 });
    await transfer(split, 333_331n);
    await transfer(split, 7n);
    await release(split, PLATFORM);
    await until(async () => {
      const i = await indexed(split);
      return i.received === 19_223_341n && i.releases === 2;
    }, CHAIN_WAIT_MS, 'period 2 to be indexed');

    const all = await settlement(key);
    await assertEqualsChain(all, split);
    assert.equal(all.totals.gross, '19223341');
    const totalReceived =
      (await f.tc.chain.publicClient.readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [split], blockNumber: BigInt(all.toBlock!) })) +
      (await f.tc.chain.publicClient.readContract({ address: split, abi: totalReleasedAbi, functionName: 'totalReleased', args: [usdc()], blockNumber: BigInt(all.toBlock!) }));
    assert.equal(BigInt(all.totals.gross), totalReceived, 'gross = what the contract received');
    assert.equal(all.totals.platformFee, all.recipients[2]!.share);
    assert.deepEqual(all.recipients.map((r) => [r.address, r.platform, r.share]), [
      [partners[0], false, all.recipients[0]!.accrued],
      [partners[1], false, all.recipients[1]!.accrued],
      [PLATFORM, true, all.recipients[2]!.accrued],
    ], 'since the split began, the period\'s shares are what each recipient accrued');
    const sumOf = (id: string | null) => all.lines.filter((l) => l.receiptId === id).reduce((a, l) => a + BigInt(l.gross), 0n);
    assert.equal(sumOf('settle-a'), 12_340_000n);
    assert.equal(sumOf('settle-b'), 5_550_000n, 'the short payment and its top-up');
    assert.equal(sumOf(null), 1_333_341n);
    assert.equal(BigInt(all.totals.released), BigInt(all.recipients[0]!.released) + BigInt(all.recipients[2]!.released));
    assert.ok(BigInt(all.recipients[0]!.released) > 0n && BigInt(all.recipients[2]!.released) > 0n && all.recipients[1]!.released === '0');

    // Two periods that split the history at the first transfer of period 2.
    const boundary = all.lines.find((l) => l.gross === '333331')!.timestamp;
    const first = await settlement(key, `?to=${boundary}`);
    const second = await settlement(key, `?from=${boundary}`);
    await assertEqualsChain(first, split);
    await assertEqualsChain(second, split);
    assert.ok(BigInt(first.toBlock!) < BigInt(second.toBlock!));
    assert.deepEqual([...first.lines, ...second.lines], all.lines, 'the two periods hold every line once');
    assert.deepEqual(second.lines.map((l) => l.gross), ['333331', '7']);
    assert.deepEqual(
      first.recipients.map((r, i) => BigInt(r.share) + BigInt(second.recipients[i]!.share)),
      all.recipients.map((r) => BigInt(r.share)),
    );
    assert.deepEqual(first.recipients.map((r) => r.released), [all.recipients[0]!.released, '0', '0'], 'period 1 released to the first partner only');
    assert.deepEqual(second.recipients.map((r) => r.released), ['0', '0', all.recipients[2]!.released], 'period 2 released to the platform only');

    // CSV: the same lines, a column per recipient.
    const csv = await f.t.call(key, 'GET', '/api/split/settlements?format=csv');
    assert.equal(csv.status, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    assert.match(String(csv.headers['content-disposition']), /^attachment; filename="settlement-0x[0-9a-f]{40}-0-now\.csv"$/);
    const rows = String(csv.body).trimEnd().split('\r\n').map((r) => r.split(','));
    assert.deepEqual(rows[0], ['timestamp', 'block_number', 'transaction_hash', 'log_index', 'receipt_id', 'version', 'split', 'gross', `share_${partners[0]}`, `share_${partners[1]}`, `share_${PLATFORM}`, 'platform_fee', 'unallocated']);
    assert.deepEqual(
      rows.slice(1),
      all.lines.map((l) => [new Date(l.timestamp).toISOString(), l.blockNumber, l.transactionHash, String(l.logIndex), l.receiptId ?? '', '1', split, l.gross, ...l.shares, l.platformFee, l.unallocated]),
    );
  });

  test('a reorganisation that replaces a transfer: the settlement follows the chain that won, to the base unit', async () => {
    const s = await signIn(f.t);
    const deployed = await admin(f.t, s, 'POST', '/api/split/deploy', {
      recipients: [
        { address: stranger(), sharesBps: 3333 },
        { address: stranger(), sharesBps: 6617 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    });
    assert.equal(deployed.status, 200, JSON.stringify(deployed.body));
    const split = deployed.body.split.address as Hex;
    const key = await f.t.key(s.wallet, { scopes: ['split:read'] });
    await transfer(split, 1_000_003n);
    const payer = devWallet(f.tc, 0);
    const nonce = await f.tc.chain.publicClient.getTransactionCount({ address: payer.account.address, blockTag: 'pending' });
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [split, 2_000_001n] });
    const lost = await payer.sendTransaction({ to: usdc(), data, nonce });
    const lostBlock = (await f.tc.chain.publicClient.waitForTransactionReceipt({ hash: lost })).blockNumber;
    await until(async () => (await indexed(split)).received === 3_000_004n, CHAIN_WAIT_MS, 'both transfers to be indexed');
    const before = await settlement(key);
    assert.ok(before.lines.some((l) => l.transactionHash === lost.toLowerCase()));

    // The block of the second transfer is replaced by one where the same nonce sends 500,001 units instead.
    const head = await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    const instead = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [split, 500_001n] });
    await anvilClient(f.tc).request({ method: 'anvil_reorg' as never, params: [Number(head - lostBlock + 1n), [[{ from: payer.account.address, to: usdc(), data: instead, nonce }, 0]]] as never });
    await until(async () => (await indexed(split)).received === 1_500_004n, CHAIN_WAIT_MS, 'the index to follow the chain that won');
    const after = await settlement(key);
    await assertEqualsChain(after, split);
    assert.equal(after.totals.gross, '1500004');
    assert.deepEqual(after.lines.map((l) => l.gross), ['1000003', '500001']);
    assert.ok(!after.lines.some((l) => l.transactionHash === lost.toLowerCase()), 'the removed transfer is gone');
  });

  test('an overpaid receipt: all it received is its gross, shared to the base unit as the contract shares it', async () => {
    const s = await signIn(f.t);
    const partner = stranger();
    const deployed = await admin(f.t, s, 'POST', '/api/split/deploy', { recipients: [{ address: partner, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
    assert.equal(deployed.status, 200, JSON.stringify(deployed.body));
    const split = deployed.body.split.address as Hex;
    const key = await f.t.key(s.wallet, { scopes: ['split:read'] });
    const sh = { s, wallet: s.wallet.toLowerCase(), key: await f.t.key(s.wallet), split };
    // Priced 2.00, paid 3.000001: the buyer's extra is the merchant's money too, split as the rest.
    await transfer(await receiptPayTo(f.t, sh, 'settle-over', 2), 3_000_001n);
    await until(async () => (await indexed(split)).received === 3_000_001n, CHAIN_WAIT_MS, 'the overpayment to be swept and indexed');
    const detail = await f.t.call(sh.key, 'GET', '/api/receipts/settle-over');
    assert.equal(detail.body.exception, 'overpaid');
    const report = await settlement(key);
    await assertEqualsChain(report, split);
    assert.deepEqual(report.lines.map((l) => [l.receiptId, l.gross]), [['settle-over', '3000001']], 'the whole payment, not the receipt\'s total');
    assert.equal(report.totals.gross, '3000001');
    assert.deepEqual(
      report.recipients.map((r) => [r.address, r.share]),
      [
        [partner, ((3_000_001n * 9950n) / 10_000n).toString()],
        [PLATFORM, ((3_000_001n * 50n) / 10_000n).toString()],
      ],
      'each share is the floor the contract pays',
    );
  });

  test('400 invalid_input for a bad period or format; 401 without a key; 403 without split:read; an empty report before a split', async () => {
    const s = await signIn(f.t);
    const key = await f.t.key(s.wallet, { scopes: ['split:read'] });
    for (const q of ['?from=10&to=5', '?to=-1', '?from=abc', '?format=xml']) {
      const res = await f.t.call(key, 'GET', `/api/split/settlements${q}`);
      assert.equal(res.status, 400, `${q}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'invalid_input');
      assert.equal(typeof res.body.message, 'string');
    }
    assert.equal((await f.t.call(null, 'GET', '/api/split/settlements')).status, 401);
    const scope = await f.t.call(await f.t.key(s.wallet, { scopes: ['receipts:read'] }), 'GET', '/api/split/settlements');
    assert.equal(scope.status, 403);
    assert.equal(scope.body.error, 'forbidden');
    const none = await settlement(key);
    assert.deepEqual([none.split, none.recipients, none.lines, none.toBlock], [null, [], [], null]);
  });
});
