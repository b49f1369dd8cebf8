/**
 * Only the receipt's token is money (DESIGN "Only the receipt's token is money"), tried on the
 * real dev chain the way an adversary would: through the public API and anvil's own port, with
 * CONFIRMATIONS=3 and the chain worker driven pass by pass.
 *
 * - A stranger's contract that only emits Transfer(stranger, payTo, 1) changes nothing: the unpaid
 *   receipt stays pending and expires on time; a paid one completes however many such logs (or
 *   zero-value transfers of the real token) arrive, one per block.
 * - A zero-value transfer, or transferFrom(0x…dEaD, payTo, 0), never names the payer.
 * - Money sent to a receipt's payment address before the receipt exists is credited and swept.
 * - A reorganisation that removes money a receipt had sends receipt.payment_reversed with the new
 *   amountPaid; paid again with the same amount, receipt.payment_received is sent again.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { erc20Abi, type Address, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { paymentSalt, predictPaymentAddress } from '../../src/chain/payment-address.ts';
import { receipts, receiptStatusHistory, sweeps, webhookEvents } from '../../src/db/schema.ts';
import { EARLY_LOOK_DEPTH } from '../../src/payments/early-money.ts';
import { anvilClient, deployShop, devWallet, PLATFORM, receiptPayTo, type Shop, useChainApp } from './helpers.ts';
import { emitFakeTransfer } from './test-contracts.ts';

const f = useChainApp({ CONFIRMATIONS: '3', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });

const anvil = () => anvilClient(f.tc);
const wallet = (i: number) => devWallet(f.tc, i);
const usdc = () => f.tc.chain.usdc.address;
const DEAD = '0x000000000000000000000000000000000000dEaD' as Address;

const shop = (): Promise<Shop> => deployShop(f.t);

const receipt = (sh: Shop, id: string, totalUsd: number): Promise<Hex> => receiptPayTo(f.t, sh, id, totalUsd);

async function mined(hash: Hex): Promise<bigint> {
  const r = await f.tc.chain.publicClient.waitForTransactionReceipt({ hash });
  assert.equal(r.status, 'success');
  return r.blockNumber;
}

async function pay(from: number, to: Hex, amount: bigint): Promise<{ hash: Hex; block: bigint }> {
  const hash = await wallet(from).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [to, amount], gas: 100_000n });
  return { hash, block: await mined(hash) };
}

async function passes(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await f.worker.pass();
}

/**
 * Passes, with a block mined between them (sweeps are sent in the background and read a pass
 * later, and depth needs blocks), until the receipt's detail satisfies `done`.
 */
async function drive(sh: Shop, id: string, done: (d: Awaited<ReturnType<typeof detail>>) => boolean, what: string) {
  // Up to 30: a sweep whose nonce a reverted snapshot took back is given up after 12 blocks and sent anew.
  for (let i = 0; i < 30; i++) {
    await f.worker.pass();
    const d = await detail(sh, id);
    if (done(d)) return d;
    await anvil().mine({ blocks: 1 });
  }
  assert.fail(`${id} never got to: ${what}; it is ${JSON.stringify(await detail(sh, id))}`);
}

async function row(sh: Shop, id: string) {
  const [r] = await f.t.deps.database.db.select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
  assert.ok(r);
  return r;
}

async function detail(sh: Shop, id: string) {
  const res = await f.t.call(sh.key, 'GET', `/api/receipts/${id}`);
  assert.equal(res.status, 200);
  return { ...res.body, history: res.body.statusHistory.map((h: { status: string }) => h.status) as string[] };
}

async function events(sh: Shop, id: string, type: string) {
  const rows = await f.t.deps.database.db
    .select({ payload: webhookEvents.payload })
    .from(webhookEvents)
    .where(and(eq(webhookEvents.wallet, sh.wallet), eq(webhookEvents.type, type)));
  return rows.map((r) => (r.payload as { data: Record<string, string> }).data).filter((d) => d.receiptId === id);
}

/** A stranger's (dev account 6) contract emits Transfer(stranger, to, value): a log, no money. */
const fakeLog = (to: Hex, value: bigint): Promise<void> => emitFakeTransfer(f.tc, 6, to, value);

async function zeroTransferFromDead(to: Hex): Promise<void> {
  await mined(await wallet(6).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transferFrom', args: [DEAD, to, 0n], gas: 100_000n }));
}

describe("logs of other contracts and zero-value transfers", () => {
  test('a fake Transfer log parks nothing: the unpaid receipt stays pending, sends no event and expires on time', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'liar-1', 5);
    await passes(1);
    for (let i = 0; i < 4; i++) {
      await fakeLog(payTo, 5_000_000n);
      await passes(1);
    }
    const d = await detail(sh, 'liar-1');
    assert.equal(d.status, 'pending', 'a log is a claim, not money');
    assert.equal(d.exception, null);
    assert.equal(d.amountPaid, '0');
    assert.deepEqual(await events(sh, 'liar-1', 'receipt.tx_mismatch'), []);
    assert.deepEqual(await events(sh, 'liar-1', 'receipt.payment_received'), []);
    // Its time runs out while the stranger goes on: it fails as expired, and says so.
    await f.t.deps.database.db.update(receipts).set({ expiresAt: Date.now() - 1 }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'liar-1')));
    await fakeLog(payTo, 1n);
    await passes(1);
    const expired = await detail(sh, 'liar-1');
    assert.equal(expired.status, 'failed');
    assert.equal(expired.exception, 'expired');
    assert.equal((await events(sh, 'liar-1', 'receipt.expired')).length, 1);
  });

  test('one fake log and one zero-value transfer per block never hold a paid receipt short of completion', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'liar-2', 4);
    await pay(1, payTo, 4_000_000n);
    await passes(2);
    assert.equal((await detail(sh, 'liar-2')).status, 'recipient_validated');
    for (let i = 0; i < 6; i++) {
      if (i % 2 === 0) await fakeLog(payTo, 1n);
      else await zeroTransferFromDead(payTo);
      await passes(1);
    }
    const d = await detail(sh, 'liar-2');
    assert.equal(d.status, 'completed', 'the counted transfer and its sweep are deep: the stranger does not matter');
    assert.equal(d.exception, null);
    assert.equal(d.amountPaid, '4000000');
  });

  test('a zero-value transfer before the buyer pays, or transferFrom(0x…dEaD, payTo, 0), never names the payer', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'payer-1', 2);
    await zeroTransferFromDead(payTo);
    await mined(await wallet(6).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [payTo, 0n], gas: 100_000n }));
    await fakeLog(payTo, 2_000_000n);
    await passes(1);
    const before = await detail(sh, 'payer-1');
    assert.equal(before.payer, null, 'no money, no payer');
    assert.equal(before.status, 'pending');
    await pay(2, payTo, 2_000_000n);
    await passes(1);
    await zeroTransferFromDead(payTo);
    const d = await drive(sh, 'payer-1', (x) => x.status === 'completed', 'completed');
    assert.equal(d.payer, devAccount(2).address.toLowerCase(), 'the sender of the transfer that brought the money');
    assert.equal(d.status, 'completed');
  });
});

describe('reversals', () => {
  test('a reorganisation that removes a payment sends payment_reversed; the same amount paid again sends payment_received again', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'rev-1', 5);
    await passes(1);
    const snapshot = await anvil().snapshot();
    const first = await pay(3, payTo, 5_000_000n);
    await passes(2);
    assert.equal((await detail(sh, 'rev-1')).status, 'recipient_validated');
    const received = await events(sh, 'rev-1', 'receipt.payment_received');
    assert.equal(received.length, 1);
    assert.equal(received[0]!.amountPaid, '5000000');
    assert.equal(received[0]!.transactionHash, first.hash.toLowerCase());

    await anvil().revert({ id: snapshot });
    await anvil().mine({ blocks: 4 });
    await passes(2);
    const back = await detail(sh, 'rev-1');
    assert.equal(back.status, 'pending');
    assert.equal(back.amountPaid, '0');
    const reversed = await events(sh, 'rev-1', 'receipt.payment_reversed');
    assert.equal(reversed.length, 1, 'the merchant hears that the money is gone');
    assert.equal(reversed[0]!.amountPaid, '0');
    assert.equal(reversed[0]!.amountReversed, '5000000');
    assert.equal(reversed[0]!.status, 'pending');
    const notes = await f.t.deps.database.db
      .select({ note: receiptStatusHistory.note })
      .from(receiptStatusHistory)
      .where(and(eq(receiptStatusHistory.wallet, sh.wallet), eq(receiptStatusHistory.receiptId, 'rev-1')));
    assert.ok(notes.some((n) => n.note?.includes('payment reversed')), 'and the history says so');

    // The buyer pays the same amount again: that is news, and it is sent.
    const again = await pay(3, payTo, 5_000_000n);
    // (Its sweep is the sweeper's business: the revert also removed the service's own sweep.)
    const repaid = await drive(sh, 'rev-1', (x) => x.amountPaid === '5000000', 'paid again');
    assert.equal(repaid.transactionHash, again.hash.toLowerCase());
    const all = await events(sh, 'rev-1', 'receipt.payment_received');
    assert.equal(all.length, 2, 'payment_received again for the new transfer');
    assert.equal(all[1]!.transactionHash, again.hash.toLowerCase());
    assert.equal(all[1]!.amountPaid, '5000000');
  });

  test('a partial reversal (one of two transfers removed) reports the new amountPaid', async () => {
    const sh = await shop();
    const payTo = await receipt(sh, 'rev-2', 6);
    await pay(4, payTo, 2_000_000n);
    await passes(1);
    const snapshot = await anvil().snapshot();
    await pay(4, payTo, 4_000_000n);
    await passes(2);
    assert.equal((await detail(sh, 'rev-2')).amountPaid, '6000000');
    await anvil().revert({ id: snapshot });
    await anvil().mine({ blocks: 4 });
    await passes(2);
    const d = await detail(sh, 'rev-2');
    assert.equal(d.amountPaid, '2000000');
    const reversed = await events(sh, 'rev-2', 'receipt.payment_reversed');
    assert.equal(reversed.length, 1);
    assert.equal(reversed[0]!.amountPaid, '2000000');
    assert.equal(reversed[0]!.amountReversed, '4000000');
    assert.equal(reversed[0]!.amountDue, '4000000');
  });
});

describe('money that arrives before the receipt', () => {
  /** Pays `amount` to the address receipt `id` will have, then lets the scanner read past it. */
  async function paidBeforeReceipt(sh: Shop, id: string, amount: bigint): Promise<{ payTo: Hex; first: { hash: Hex; block: bigint } }> {
    // Anyone can work the address out: merchant, receipt id, split and factory are public.
    const payTo = predictPaymentAddress({ factory: f.tc.chain.paymentFactory!, split: sh.split, salt: paymentSalt(sh.wallet, id) }).toLowerCase() as Hex;
    const first = await pay(5, payTo, amount);
    await anvil().mine({ blocks: 2 });
    await passes(2);
    return { payTo, first };
  }

  test('5 USDC sent to the address first: the receipt is created, credited with exactly that, swept and completed; a second 5 makes 10, as the split says', async () => {
    const sh = await shop();
    const { payTo, first } = await paidBeforeReceipt(sh, 'early-1', 5_000_000n);
    assert.equal(await receipt(sh, 'early-1', 5), payTo, 'the address the buyer paid');
    const d = await drive(sh, 'early-1', (x) => x.status === 'completed', 'completed');
    assert.equal(d.status, 'completed');
    assert.equal(d.exception, null);
    assert.equal(d.amountPaid, '5000000');
    assert.equal(d.transactionHash, first.hash.toLowerCase());
    assert.equal(d.payer, devAccount(5).address.toLowerCase());
    const balance = () => f.tc.chain.publicClient.readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [payTo] });
    assert.equal(await balance(), 0n, 'swept into the split');
    assert.equal((await events(sh, 'early-1', 'receipt.payment_received')).length, 1);

    await pay(5, payTo, 5_000_000n);
    const indexedCredit = async () =>
      ((await f.t.call(sh.key, 'GET', `/api/split/transactions?address=${sh.split}`)).body as { receiptId: string | null; amountBaseUnits: string; status: string }[])
        .filter((x) => x.receiptId === 'early-1' && x.status === 'received')
        .reduce((sum, x) => sum + BigInt(x.amountBaseUnits), 0n);
    let credit = 0n;
    const twice = await drive(sh, 'early-1', (x) => x.amountPaid === '10000000', 'paid 10');
    for (let i = 0; i < 10 && (credit = await indexedCredit()) < 10_000_000n; i++) {
      await passes(1);
      await anvil().mine({ blocks: 1 });
    }
    assert.equal(twice.amountPaid, '10000000');
    assert.equal(twice.exception, 'overpaid');
    assert.equal(credit, 10_000_000n, "the receipt's figure equals what the split transactions credit it");
    assert.equal(await balance(), 0n);
  });

  test('early money that a sweep moved along with a later payment is still credited: the look reads the balance at the block stored with the address', async () => {
    const sh = await shop();
    const { payTo, first } = await paidBeforeReceipt(sh, 'early-swept', 5_000_000n);
    assert.equal(await receipt(sh, 'early-swept', 10), payTo);
    await passes(1);
    const stored = await row(sh, 'early-swept');
    assert.ok(stored.payAddressBlock !== null && stored.payAddressBlock > first.block, 'stored with the block the scanner had read, past the early payment');
    assert.equal(stored.earlyMoneyCheckedAt, null, 'not looked at yet: the chain is not EARLY_LOOK_DEPTH blocks past that block');
    // The buyer pays the other 5 at once: the scanner records it and the sweep moves all 10,
    // before the look.
    await pay(6, payTo, 5_000_000n);
    const sent = () => f.t.deps.database.db.select().from(sweeps).where(eq(sweeps.payAddress, payTo));
    for (let i = 0; i < 5 && (await sent()).length === 0; i++) await passes(1);
    assert.deepEqual((await sent()).map((x) => x.amountUnits), ['10000000'], 'the sweep moved the early money with the payment');
    assert.equal((await row(sh, 'early-swept')).earlyMoneyCheckedAt, null, 'before the look');
    const d = await drive(sh, 'early-swept', (x) => x.status === 'completed', 'completed');
    assert.deepEqual([d.status, d.exception, d.amountPaid], ['completed', null, '10000000'], 'the early 5 counted: the look read the balance at the block stored with the address');
    assert.equal((await sent()).length, 1, 'one sweep');
  });

  test('an address with nothing at it costs one balance read and records nothing; checked once, EARLY_LOOK_DEPTH blocks after it was stored', async () => {
    const sh = await shop();
    await receipt(sh, 'early-none', 1);
    await passes(2);
    assert.equal((await row(sh, 'early-none')).earlyMoneyCheckedAt, null, 'no block since it was stored: not looked at yet');
    await anvil().mine({ blocks: Number(EARLY_LOOK_DEPTH) });
    await passes(1);
    assert.ok((await row(sh, 'early-none')).earlyMoneyCheckedAt !== null, 'looked at once');
    assert.equal((await detail(sh, 'early-none')).status, 'pending');
  });
});
