/**
 * Refunds on the real dev chain, through the HTTP API. A refund that names its transaction is
 * recorded only when that transaction, mined and successful, holds a Transfer of the receipt's
 * token to the buyer of at least the refunded amount that no other refund used. Every other
 * transaction is refused with 400 and a reason, and nothing is recorded: a transfer to someone
 * else, too little, another token, an Approval, an unmined hash, a reverted transaction, a
 * transfer already used. A refund without a transaction is still recorded, unverified.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { createTestClient, createWalletClient, erc20Abi, http, type Address, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { deployTestUsdc, testUsdcAbi } from '../../src/chain/test-usdc.ts';
import { refunds, webhookEvents } from '../../src/db/schema.ts';
import { matchRefundTransfer, type TokenTransfer } from '../../src/domain/refunds.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';
import { randomWallet, startTestApp } from '../helpers/app.ts';
import { CHAIN_WAIT_MS, PLATFORM, useChainApp } from './helpers.ts';
import { waitFor } from '../helpers/wait.ts';
import { batchPayContract, BATCH_PAY_ABI } from './test-contracts.ts';
import { staleReceiptViews, unrenderedReceipts } from '../helpers/receipt-views.ts';

const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM }, { workers: true });

/** Dev accounts: the buyer pays receipts; the merchant's wallet sends refunds; a stranger receives one by mistake. */
const BUYER = 2;
const STRANGER = 3;
/** Mints test USDC into merchants' wallets (anyone may mint it). */
const MINTER = 4;
const buyerAddress = devAccount(BUYER).address.toLowerCase();

/** The wallet of a dev account, or a merchant's own. */
const walletOf = (who: number | Shop) =>
  createWalletClient({ chain: f.tc.chain.publicClient.chain, transport: http(f.tc.chain.rpcUrl), account: typeof who === 'number' ? devAccount(who) : who.s.account });
const usdc = () => f.tc.chain.usdc.address;

async function mined(hash: Hex, status: 'success' | 'reverted' = 'success'): Promise<Hex> {
  const receipt = await f.tc.chain.publicClient.waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, status);
  return hash;
}

/** `amount` base units of `token` from dev account `from`, or a merchant's own wallet, to `to`. */
const transfer = async (from: number | Shop, to: string, amount: bigint, token: Address = usdc()) =>
  mined(await walletOf(from).writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to as Address, amount] }));

interface Shop {
  s: Session;
  key: string;
}

/** A merchant whose own wallet holds test ETH and USDC, to send refunds from. */
async function shop(): Promise<Shop> {
  const s = await signIn(f.t);
  const anvil = createTestClient({ chain: f.tc.chain.publicClient.chain, mode: 'anvil', transport: http(f.tc.chain.rpcUrl) });
  await anvil.setBalance({ address: s.account.address, value: 10n ** 19n });
  await mined(await walletOf(MINTER).writeContract({ address: usdc(), abi: testUsdcAbi, functionName: 'mint', args: [s.account.address, 10n ** 12n] }));
  const res = await admin(f.t, s, 'POST', '/api/split/deploy', {
    recipients: [
      { address: s.wallet, sharesBps: 9950 },
      { address: PLATFORM, sharesBps: 50 },
    ],
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { s, key: await f.t.key(s.wallet) };
}

async function detail(sh: Shop, id: string) {
  const res = await f.t.call(sh.key, 'GET', `/api/receipts/${id}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** A receipt of `totalUsd` that the buyer paid in full from their wallet, completed. */
async function paidReceipt(sh: Shop, id: string, totalUsd: number) {
  const created = await f.t.call(sh.key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Item', priceUsd: totalUsd }], totalUsd });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const page = await f.t.call(null, 'GET', `/api/pay/${id}${new URL(created.body.paymentUrl).search}`);
  assert.equal(page.status, 200, JSON.stringify(page.body));
  await transfer(BUYER, page.body.payment.payTo, BigInt(page.body.payment.due));
  return waitFor(async () => {
    const d = await detail(sh, id);
    return d.status === 'completed' ? d : undefined;
  }, CHAIN_WAIT_MS, `${id} to be completed`);
}

const refund = (sh: Shop, receiptId: string, usd: number, txHash?: string, buyer = buyerAddress) =>
  admin(f.t, sh.s, 'POST', '/api/receipts/refund', { receiptId, wallet: sh.s.wallet, buyer, usd, ...(txHash === undefined ? {} : { txHash }) });

/** Everything a refund could change: the detail (status, history, refunds) and the refund entries. */
async function recorded(sh: Shop, id: string) {
  const entries = await admin(f.t, sh.s, 'GET', `/api/receipts/${id}/refunds`);
  assert.equal(entries.status, 200);
  return JSON.stringify([await detail(sh, id), entries.body.refunds]);
}

const units = (usd: number) => BigInt(Math.round(usd * 100)) * 10_000n;

describe('a refund carrying txHash', () => {
  test('a transfer from the merchant\'s wallet to the payer proves a partial refund; a second one, the rest: refunded', async () => {
    const sh = await shop();
    const paid = await paidReceipt(sh, 'rf-ok', 10);
    assert.equal(paid.payer, buyerAddress, 'the payer is the address that paid');
    assert.equal(paid.refundedUsd, 0);
    assert.deepEqual(paid.refunds, []);

    const first = await transfer(sh, paid.payer, units(4));
    const part = await refund(sh, 'rf-ok', 4, first);
    assert.equal(part.status, 200, JSON.stringify(part.body));
    assert.deepEqual({ ...part.body, refundId: '' }, { ok: true, refundId: '', refundedUsd: 4, status: 'completed', verified: true, verification: 'verified' });
    const partly = await detail(sh, 'rf-ok');
    assert.equal(partly.status, 'completed', 'a partly refunded receipt keeps its status');
    assert.equal(partly.refundedUsd, 4);
    assert.deepEqual(
      partly.refunds.map((r: Record<string, unknown>) => [r.usd, r.buyer, r.txHash, r.verified]),
      [[4, buyerAddress, first.toLowerCase(), true]],
    );
    const listed = (await f.t.call(sh.key, 'GET', '/api/receipts')).body.receipts.find((r: { receiptId: string }) => r.receiptId === 'rf-ok');
    assert.equal(listed.refundedUsd, 4);
    const [row] = await f.t.deps.database.db.select().from(refunds).where(eq(refunds.id, part.body.refundId));
    assert.equal(row!.amountUnits, '4000000');
    assert.equal(typeof row!.logIndex, 'number');
    assert.ok(row!.verifiedAt !== null && row!.verifiedAt > 0);

    const second = await transfer(sh, paid.payer, units(6));
    const rest = await refund(sh, 'rf-ok', 6, second);
    assert.equal(rest.status, 200, JSON.stringify(rest.body));
    assert.equal(rest.body.status, 'refunded');
    const done = await detail(sh, 'rf-ok');
    assert.equal(done.status, 'refunded');
    assert.equal(done.refundedUsd, 10);
    assert.deepEqual(done.refunds.map((r: { verified: boolean }) => r.verified), [true, true]);
    assert.deepEqual(
      done.statusHistory.map((h: { status: string }) => h.status),
      ['pending', 'tx_mined', 'recipient_validated', 'completed', 'refund_partial', 'refunded'],
    );
  });

  test('a transfer of more than the refund proves it; the refunds still never exceed the total', async () => {
    const sh = await shop();
    await paidReceipt(sh, 'rf-more', 3);
    const generous = await transfer(sh, buyerAddress, units(5));
    const over = await refund(sh, 'rf-more', 3.01, generous);
    assert.equal(over.status, 400);
    assert.equal(over.body.error, 'invalid_usd');
    const ok = await refund(sh, 'rf-more', 3, generous);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.status, 'refunded');
  });

  test('each transaction that does not prove the refund is refused with 400 and its reason, and nothing is recorded', async () => {
    const sh = await shop();
    await paidReceipt(sh, 'rf-no', 5);
    const before = await recorded(sh, 'rf-no');

    const otherToken = await deployTestUsdc({
      walletClient: walletOf(4),
      publicClient: f.tc.chain.publicClient,
      holders: [sh.s.account.address],
      amountEach: 10n ** 12n,
    });
    const approveOnly = await mined(
      await walletOf(sh).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'approve', args: [buyerAddress as Address, units(5)] }),
    );
    // More than the account holds, with the gas given so that the wallet sends it anyway.
    const reverted = await mined(
      await walletOf(sh).writeContract({
        address: usdc(),
        abi: erc20Abi,
        functionName: 'transfer',
        args: [buyerAddress as Address, 10n ** 15n],
        gas: 200_000n,
      }),
      'reverted',
    );
    const cases: [string, string, RegExp][] = [
      ['a transfer to someone else', await transfer(sh, devAccount(STRANGER).address, units(5)), /no_transfer/],
      ['too little', await transfer(sh, buyerAddress, units(4.99)), /too_little/],
      ['another token', await transfer(sh, buyerAddress, units(5), otherToken.address), /no_transfer/],
      ['only an Approval log', approveOnly, /no_transfer/],
      ['an unmined random hash', `0x${randomBytes(32).toString('hex')}`, /not_mined/],
      ['a reverted transaction', reverted, /reverted/],
    ];
    for (const [what, hash, reason] of cases) {
      const res = await refund(sh, 'rf-no', 5, hash);
      assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'invalid_input', what);
      assert.match(res.body.reason, reason, what);
      assert.equal(typeof res.body.message, 'string', what);
      assert.equal(await recorded(sh, 'rf-no'), before, `${what}: nothing recorded`);
    }
    const messages = await Promise.all(cases.map(async ([, hash]) => (await refund(sh, 'rf-no', 5, hash)).body.message as string));
    assert.match(messages[0]!, /no transfer of .* to the buyer/);
    assert.match(messages[1]!, /too little.*4990000.*5000000/);
    assert.match(messages[4]!, /not mined yet/);
    assert.match(messages[5]!, /reverted/);
  });

  test("one transfer proves one refund, its sender's: another merchant recording it gets an unverified refund and takes nothing", async () => {
    const sh = await shop();
    const other = await shop();
    await paidReceipt(sh, 'rf-once', 5);
    await paidReceipt(other, 'rf-once', 5);
    const hash = await transfer(sh, buyerAddress, units(1));
    // Merchant B records A's transfer to their shared buyer first: recorded, but never verified.
    const theirs = await refund(other, 'rf-once', 1, hash);
    assert.equal(theirs.status, 200, JSON.stringify(theirs.body));
    assert.equal(theirs.body.verified, false, "not sent from B's wallet, split or payment address");
    // A's own refund with it is not refused as already used.
    const mine = await refund(sh, 'rf-once', 1, hash);
    assert.equal(mine.status, 200, JSON.stringify(mine.body));
    assert.equal(mine.body.verified, true);
    const before = await recorded(sh, 'rf-once');
    const again = await refund(sh, 'rf-once', 1, hash);
    assert.equal(again.status, 400);
    assert.equal(again.body.error, 'invalid_input');
    assert.equal(again.body.reason, 'already_used');
    assert.match(again.body.message, /already used by another refund/);
    assert.equal(await recorded(sh, 'rf-once'), before);
    // Two at once with the same transfer: exactly one is recorded.
    const fresh = await transfer(sh, buyerAddress, units(1));
    const racing = await Promise.all([refund(sh, 'rf-once', 1, fresh), refund(sh, 'rf-once', 1, fresh)]);
    assert.deepEqual(racing.map((r) => r.status).sort(), [200, 400]);
  });

  test("a transfer to the buyer from anyone but the merchant's wallet, split or payment address is recorded unverified", async () => {
    const sh = await shop();
    await paidReceipt(sh, 'rf-who', 5);
    const stranger = await transfer(STRANGER, buyerAddress, units(5));
    const self = await transfer(BUYER, buyerAddress, units(5));
    const mint = await mined(await walletOf(STRANGER).writeContract({ address: usdc(), abi: testUsdcAbi, functionName: 'mint', args: [buyerAddress as Address, units(5)] }));
    for (const [what, hash] of [['a stranger', stranger], ["the buyer's transfer to itself", self], ['a mint', mint]] as const) {
      const res = await refund(sh, 'rf-who', 1, hash);
      if (what === "the buyer's transfer to itself") {
        assert.equal(res.status, 400, what);
        assert.equal(res.body.reason, 'no_transfer', `${what}: from == to is no transfer to the buyer`);
        continue;
      }
      assert.equal(res.status, 200, `${what}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.verified, false, what);
    }
    const rows = await f.t.deps.database.db.select().from(refunds).where(eq(refunds.receiptId, 'rf-who'));
    assert.ok(rows.every((r) => r.logIndex === null && r.verifiedAt === null), 'no transfer is taken by them');
    // The split pays too: a release is the split's own money, not the merchant's refund; but a
    // transfer from the merchant's own wallet verifies.
    assert.equal((await refund(sh, 'rf-who', 1, await transfer(sh, buyerAddress, units(1)))).body.verified, true);
  });

  test('a transaction with two transfers to the buyer proves two refunds, each with its own log', async () => {
    const sh = await shop();
    await paidReceipt(sh, 'rf-two', 5);
    const batch = await batchPayContract(f.tc, 5);
    const merchantWallet = walletOf(sh);
    await mined(await merchantWallet.writeContract({ address: usdc(), abi: erc20Abi, functionName: 'approve', args: [batch, units(5)] }));
    const hash = await mined(
      await merchantWallet.writeContract({
        address: batch,
        abi: BATCH_PAY_ABI,
        functionName: 'pay',
        args: [usdc(), [buyerAddress as Address, buyerAddress as Address], [units(2), units(3)]],
      }),
    );
    const three = await refund(sh, 'rf-two', 3, hash);
    assert.equal(three.status, 200, JSON.stringify(three.body));
    const two = await refund(sh, 'rf-two', 2, hash);
    assert.equal(two.status, 200, JSON.stringify(two.body));
    assert.equal(two.body.status, 'refunded');
    const rows = await f.t.deps.database.db.select().from(refunds).where(eq(refunds.txHash, hash.toLowerCase()));
    assert.deepEqual(rows.map((r) => r.amountUnits).sort(), ['2000000', '3000000']);
    assert.notEqual(rows[0]!.logIndex, rows[1]!.logIndex);
  });
});

describe('refunds of an overpaid receipt, and their events', () => {
  test('13 USDC arrived for 10: refunds reach 13, never more; every refund is receipt.refund_recorded, and reaching the total receipt.refunded', async () => {
    const sh = await shop();
    const created = await f.t.call(sh.key, 'POST', '/api/receipts', { id: 'rf-over', lineItems: [{ label: 'Item', priceUsd: 10 }], totalUsd: 10 });
    assert.equal(created.status, 201);
    const page = await f.t.call(null, 'GET', `/api/pay/rf-over${new URL(created.body.paymentUrl).search}`);
    await transfer(BUYER, page.body.payment.payTo, units(13));
    const paid = await waitFor(async () => {
      const d = await detail(sh, 'rf-over');
      return d.status === 'completed' ? d : undefined;
    }, CHAIN_WAIT_MS, 'rf-over to be completed');
    assert.equal(paid.exception, 'overpaid');
    assert.equal(paid.amountPaid, '13000000', 'what arrived is shown');

    const part = await refund(sh, 'rf-over', 2, await transfer(sh, buyerAddress, units(2)));
    assert.equal(part.status, 200, JSON.stringify(part.body));
    assert.equal(part.body.status, 'completed');
    const rest = await refund(sh, 'rf-over', 8, await transfer(sh, buyerAddress, units(8)));
    assert.equal(rest.status, 200, JSON.stringify(rest.body));
    assert.equal(rest.body.status, 'refunded', 'refunds cover the total');
    const tooMuch = await refund(sh, 'rf-over', 3.01);
    assert.equal(tooMuch.status, 400);
    assert.equal(tooMuch.body.error, 'invalid_usd');
    assert.match(tooMuch.body.message, /what arrived, 13/);
    const surplus = await refund(sh, 'rf-over', 3, await transfer(sh, buyerAddress, units(3)));
    assert.equal(surplus.status, 200, JSON.stringify(surplus.body));
    assert.equal(surplus.body.refundedUsd, 13, 'the surplus is refunded too');
    assert.equal(surplus.body.status, 'refunded');
    assert.equal((await refund(sh, 'rf-over', 0.01)).status, 400, 'nothing beyond what arrived');
    assert.equal((await detail(sh, 'rf-over')).refundedUsd, 13);

    const events = async (type: string) =>
      (await f.t.deps.database.db.select({ payload: webhookEvents.payload }).from(webhookEvents).where(and(eq(webhookEvents.wallet, sh.s.wallet), eq(webhookEvents.type, type))))
        .map((r) => (r.payload as { data: Record<string, unknown> }).data)
        .filter((d) => d.receiptId === 'rf-over');
    // In the order the refunds were recorded: what they add up to only grows (rows come back in no set order).
    const recordedEvents = (await events('receipt.refund_recorded')).sort((a, b) => Number(a.refundedUsd) - Number(b.refundedUsd));
    assert.deepEqual(
      recordedEvents.map((d) => [d.usd, d.refundedUsd, d.verified, d.status]),
      [
        [2, 2, true, 'completed'],
        [8, 10, true, 'refunded'],
        [3, 13, true, 'refunded'],
      ],
      'one event per refund, partial or full',
    );
    assert.equal((await events('receipt.refunded')).length, 1, 'refunded once, when the refunds reached the total');
  });

  test('a refund of an unpaid receipt is still capped at its total', async () => {
    const sh = await shop();
    await f.t.call(sh.key, 'POST', '/api/receipts', { id: 'rf-unpaid', lineItems: [{ label: 'Item', priceUsd: 4 }], totalUsd: 4 });
    assert.equal((await refund(sh, 'rf-unpaid', 4.01)).body.error, 'invalid_usd');
    assert.equal((await refund(sh, 'rf-unpaid', 4)).status, 200);
  });
});

describe('a refund without txHash', () => {
  test('is recorded unverified, as before', async () => {
    const sh = await shop();
    await paidReceipt(sh, 'rf-book', 2);
    const res = await refund(sh, 'rf-book', 0.5);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.verified, false);
    const d = await detail(sh, 'rf-book');
    assert.equal(d.status, 'completed');
    assert.equal(d.refundedUsd, 0.5);
    assert.deepEqual(
      d.refunds.map((r: Record<string, unknown>) => [r.usd, r.txHash, r.verified]),
      [[0.5, null, false]],
    );
  });

  test('on an instance without a chain, a refund with txHash is 503 chain_unavailable and records nothing', async () => {
    const bare = await startTestApp();
    try {
      const s = await signIn(bare);
      const key = await bare.key(s.wallet);
      assert.equal((await bare.call(key, 'POST', '/api/receipts', { id: 'nochain', lineItems: [{ label: 'x', priceUsd: 2 }], totalUsd: 2 })).status, 201);
      const body = { receiptId: 'nochain', wallet: s.wallet, buyer: randomWallet(), usd: 1 };
      // The spec's validation errors come first.
      assert.equal((await admin(bare, s, 'POST', '/api/receipts/refund', { ...body, usd: 0, txHash: `0x${'ab'.repeat(32)}` })).body.error, 'invalid_usd');
      const res = await admin(bare, s, 'POST', '/api/receipts/refund', { ...body, txHash: `0x${'ab'.repeat(32)}` });
      assert.equal(res.status, 503);
      assert.equal(res.body.error, 'chain_unavailable');
      const d = (await bare.call(key, 'GET', '/api/receipts/nochain')).body;
      assert.equal(d.refundedUsd, 0);
      assert.equal(d.payer, null);
      assert.equal((await admin(bare, s, 'POST', '/api/receipts/refund', body)).status, 200);
      assert.equal((await bare.call(key, 'GET', '/api/receipts/nochain')).body.refundedUsd, 1);
    } finally {
      await bare.close();
    }
  });
});

describe('matchRefundTransfer (the rule, without a chain)', () => {
  const token = '0x' + 'aa'.repeat(20);
  const buyer = '0x' + 'bb'.repeat(20);
  const log = (logIndex: number, value: bigint, over: Partial<TokenTransfer> = {}): TokenTransfer => ({
    logIndex, position: logIndex, token, from: '0x' + 'cc'.repeat(20), to: buyer, value, ...over,
  });
  const merchant = '0x' + 'cc'.repeat(20);
  const match = (transfers: TokenTransfer[], minUnits: bigint, used: number[] = []) =>
    matchRefundTransfer({ transfers, token, buyer, minUnits, used: new Set(used), senders: new Set([merchant]) });

  test('the lowest unused log of the token to the buyer with enough', () => {
    const logs = [log(7, 5n), log(2, 1n), log(4, 5n), log(1, 9n, { to: '0x' + 'dd'.repeat(20) }), log(0, 9n, { token: '0x' + 'ee'.repeat(20) })];
    assert.deepEqual(match(logs, 5n), { ok: true, transfer: logs[2] });
    assert.deepEqual(match(logs, 5n, [4]), { ok: true, transfer: logs[0] });
    assert.deepEqual(match(logs, 1n), { ok: true, transfer: logs[1] });
  });

  test('the first condition no log meets is the reason', () => {
    assert.deepEqual(match([], 1n), { ok: false, reason: 'no_transfer' });
    assert.deepEqual(match([log(0, 9n, { token: '0x' + 'ee'.repeat(20) }), log(1, 9n, { to: '0x' + 'dd'.repeat(20) })], 1n), { ok: false, reason: 'no_transfer' });
    assert.deepEqual(match([log(0, 3n), log(1, 4n)], 5n), { ok: false, reason: 'too_little', largest: 4n });
    assert.deepEqual(match([log(0, 5n), log(1, 4n)], 5n, [0]), { ok: false, reason: 'already_used' });
    assert.deepEqual(match([log(0, 9n, { from: buyer })], 1n), { ok: false, reason: 'no_transfer' }, 'from == to moves nothing');
  });

  test("a transfer from anyone but the merchant's own addresses proves nothing: unverified", () => {
    const stranger = '0x' + 'dd'.repeat(20);
    assert.deepEqual(match([log(0, 9n, { from: stranger })], 1n), { ok: true, transfer: null });
    assert.deepEqual(match([log(0, 9n, { from: '0x' + '00'.repeat(20) })], 1n), { ok: true, transfer: null }, 'a mint');
    const own = log(3, 2n);
    assert.deepEqual(match([log(0, 9n, { from: stranger }), own], 2n), { ok: true, transfer: own }, "the merchant's own transfer beside a stranger's");
    assert.deepEqual(match([log(0, 9n, { from: stranger }), own], 3n), { ok: false, reason: 'too_little', largest: 2n }, "only the merchant's own count toward the amount");
  });
});


test('every receipt these tests wrote stores the views the database renders from its rows', async () => {
  assert.deepEqual(await staleReceiptViews(f.t.deps.database.db), []);
  assert.deepEqual(await unrenderedReceipts(f.t.deps.database.db), []);
});
