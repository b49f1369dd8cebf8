/**
 * GET /api/admin/split/balances on the real dev chain: what the merchant's PaymentSplitter holds
 * for each recipient and what it released, exactly as the contract computes it, before and after
 * a recipient releases from its own wallet; the release is indexed as a split transaction.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { erc20Abi, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import { splitTransactions } from '../../src/db/schema.ts';
import { startTestApp } from '../helpers/app.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';
import { devWallet, CHAIN_WAIT_MS, PLATFORM, useChainApp } from './helpers.ts';
import { waitFor } from '../helpers/wait.ts';

const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM }, { workers: true });

const wallet = (i: number) => devWallet(f.tc, i);
const usdc = () => f.tc.chain.usdc.address;
const SHARES = 10_000n;

async function mined(hash: Hex): Promise<bigint> {
  const receipt = await f.tc.chain.publicClient.waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, 'success');
  return receipt.blockNumber;
}

/** A dev account's USDC transfer straight into `to` (not through a receipt's payment address). */
async function pay(from: number, to: Hex, amount: bigint): Promise<void> {
  await mined(await wallet(from).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [to, amount] }));
}

interface Balances {
  address: string;
  token: string;
  totalReceived: string;
  totalReleased: string;
  balance: string;
  recipients: { address: string; sharesBps: number; released: string; releasable: string }[];
}

async function balances(s: Session): Promise<Balances> {
  const res = await admin(f.t, s, 'GET', '/api/admin/split/balances');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** A merchant whose split pays two dev accounts (which can pay gas to release) and the platform. */
async function merchantWithSplit(a: number, b: number) {
  const s = await signIn(f.t);
  const recipients = [
    { address: devAccount(a).address.toLowerCase(), sharesBps: 6001 },
    { address: devAccount(b).address.toLowerCase(), sharesBps: 3949 },
    { address: PLATFORM, sharesBps: 50 },
  ];
  const res = await admin(f.t, s, 'POST', '/api/split/deploy', { recipients });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { s, split: res.body.split.address as Hex, recipients };
}

/** Every recipient's releasable is floor(received × shares / 10000) − released, exactly. */
function assertContractArithmetic(b: Balances): void {
  assert.equal(BigInt(b.totalReceived), BigInt(b.balance) + BigInt(b.totalReleased));
  let released = 0n;
  for (const r of b.recipients) {
    const due = (BigInt(b.totalReceived) * BigInt(r.sharesBps)) / SHARES - BigInt(r.released);
    assert.equal(BigInt(r.releasable), due, `releasable of ${r.address}`);
    released += BigInt(r.released);
  }
  assert.equal(released, BigInt(b.totalReleased));
}

describe('split balances', () => {
  test('before any split: 404 not_found; without a session: 401; without a chain: 503 chain_unavailable', async () => {
    const s = await signIn(f.t);
    const none = await admin(f.t, s, 'GET', '/api/admin/split/balances');
    assert.equal(none.status, 404, JSON.stringify(none.body));
    assert.equal(none.body.error, 'not_found');
    const anonymous = await f.t.call(null, 'GET', '/api/admin/split/balances');
    assert.equal(anonymous.status, 401);
    const key = await f.t.key(s.wallet);
    assert.equal((await f.t.call(key, 'GET', '/api/admin/split/balances')).status, 401, 'a subscription key is no session');

    const chainless = await startTestApp({ PLATFORM_RECIPIENT_ADDRESS: PLATFORM });
    try {
      const s2 = await signIn(chainless);
      const res = await admin(chainless, s2, 'GET', '/api/admin/split/balances');
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.equal(res.body.error, 'chain_unavailable');
    } finally {
      await chainless.close();
    }
  });

  test('payments straight into the split are releasable per share, rounded down; a release moves them to released and is indexed', async () => {
    const { s, split, recipients } = await merchantWithSplit(4, 5);
    const empty = await balances(s);
    assert.equal(empty.address, split);
    assert.equal(empty.token, usdc().toLowerCase());
    assert.deepEqual([empty.totalReceived, empty.totalReleased, empty.balance], ['0', '0', '0']);
    assert.deepEqual(
      empty.recipients.map((r) => [r.address, r.sharesBps, r.released, r.releasable]),
      recipients.map((r) => [r.address, r.sharesBps, '0', '0']),
    );

    // Amounts that do not divide by 10,000, so every share is rounded down.
    await pay(0, split, 1_000_003n);
    await pay(1, split, 777_777n);
    const received = 1_777_780n;
    const before = await balances(s);
    assert.equal(before.totalReceived, received.toString());
    assert.equal(before.balance, received.toString());
    assert.equal(before.totalReleased, '0');
    assertContractArithmetic(before);
    const [a, b, platform] = before.recipients;
    assert.equal(a!.releasable, ((received * 6001n) / SHARES).toString());
    assert.equal(b!.releasable, ((received * 3949n) / SHARES).toString());
    assert.equal(platform!.releasable, ((received * 50n) / SHARES).toString());

    // The first recipient releases from its own wallet.
    const recipient = devAccount(4);
    const balanceBefore = await f.tc.chain.publicClient.readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [recipient.address] });
    const hash = await wallet(4).writeContract({
      address: split,
      abi: paymentSplitterAbi,
      functionName: 'release',
      args: [usdc(), recipient.address],
    });
    await mined(hash);
    const balanceAfter = await f.tc.chain.publicClient.readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [recipient.address] });
    assert.equal(balanceAfter - balanceBefore, BigInt(a!.releasable), 'the recipient received exactly what was releasable');

    const afterRelease = await balances(s);
    assertContractArithmetic(afterRelease);
    assert.equal(afterRelease.totalReceived, received.toString(), 'a release is not a receipt');
    assert.equal(afterRelease.totalReleased, a!.releasable);
    assert.equal(afterRelease.balance, (received - BigInt(a!.releasable)).toString());
    assert.deepEqual(
      afterRelease.recipients.map((r) => [r.released, r.releasable]),
      [
        [a!.releasable, '0'],
        ['0', b!.releasable],
        ['0', platform!.releasable],
      ],
    );

    // More money after the release: releasable stays floor(total × shares / 10000) − released.
    await pay(2, split, 333_331n);
    const later = await balances(s);
    assertContractArithmetic(later);
    const total = received + 333_331n;
    assert.equal(later.recipients[0]!.releasable, ((total * 6001n) / SHARES - BigInt(a!.releasable)).toString());

    // The worker indexes the release as a split transaction of this merchant.
    const row = await waitFor(async () => {
      const [r] = await f.t.deps.database.db
        .select()
        .from(splitTransactions)
        .where(and(eq(splitTransactions.transactionHash, hash.toLowerCase()), eq(splitTransactions.kind, 'release')));
      return r;
    }, CHAIN_WAIT_MS, 'the release to be indexed');
    assert.equal(row.wallet, s.wallet);
    assert.equal(row.splitAddress, split);
    assert.equal(row.counterparty, recipient.address.toLowerCase());
    assert.equal(row.amountUnits, a!.releasable);
    assert.equal(row.receiptId, null);
    // And both direct payments, with no receipt.
    const payments = await waitFor(async () => {
      const rows = await f.t.deps.database.db
        .select()
        .from(splitTransactions)
        .where(and(eq(splitTransactions.splitAddress, split), eq(splitTransactions.kind, 'payment')));
      return rows.length === 3 ? rows : undefined;
    }, CHAIN_WAIT_MS, 'the payments to be indexed');
    assert.deepEqual(payments.map((p) => p.amountUnits).sort(), ['1000003', '333331', '777777']);
    assert.ok(payments.every((p) => p.receiptId === null));
  });

  test("a merchant sees only its own split's balances", async () => {
    const first = await merchantWithSplit(6, 7);
    const second = await merchantWithSplit(7, 6);
    await pay(0, first.split, 5_000_000n);
    assert.equal((await balances(first.s)).totalReceived, '5000000');
    const other = await balances(second.s);
    assert.equal(other.address, second.split);
    assert.equal(other.totalReceived, '0');
  });
});
