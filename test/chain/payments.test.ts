/**
 * Payments end to end on the real dev chain, through the HTTP API, tried as an attacker and as an
 * unlucky buyer would. Every receipt has its own payment address; a receipt's payments are the
 * transfers into it, and nothing else: no transaction hash, amount or timing can give one
 * receipt another's money. Each test asserts that the right receipt completes and the wrong one
 * does not.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import { createTestClient, erc20Abi, http, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { paymentSalt, predictPaymentAddress } from '../../src/chain/payment-address.ts';
import { deployTestUsdc } from '../../src/chain/test-usdc.ts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import { receipts, webhookEvents } from '../../src/db/schema.ts';
import { ChainWorker } from '../../src/payments/worker.ts';
import { verifyWebhook } from '../../src/webhooks/sign.ts';
import { and, eq } from 'drizzle-orm';
import { admin, signIn } from '../helpers/session.ts';
import { startTestApp } from '../helpers/app.ts';
import { CHAIN_WAIT_MS, deployShop, devWallet, PLATFORM, postReceipt, type Shop, useChainApp } from './helpers.ts';
import { until, waitFor } from '../helpers/wait.ts';
import { batchPayContract, BATCH_PAY_ABI } from './test-contracts.ts';
import { staleReceiptViews, unrenderedReceipts } from '../helpers/receipt-views.ts';

const f = useChainApp({ WEBHOOK_ALLOW_PRIVATE: 'true', CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM }, { workers: true });

const buyer = (i: number) => devWallet(f.tc, i);

async function shop(): Promise<Shop> {
  const sh = await deployShop(f.t);
  assert.match(sh.split, /^0x[0-9a-f]{40}$/, 'the split contract was deployed');
  return sh;
}

interface Payment {
  chainId: number;
  tokenAddress: Hex;
  payTo: Hex;
  splitAddress: Hex;
  amount: string;
  paid: string;
  due: string;
}

async function page(id: string, search: string): Promise<{ status: string; exception: string | null; payment: Payment; expiresAt: number }> {
  const res = await f.t.call(null, 'GET', `/api/pay/${id}${search}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

async function receipt(sh: Shop, id: string, totalUsd: number, extra: Record<string, unknown> = {}) {
  const search = await postReceipt(f.t, sh, id, totalUsd, extra);
  return { id, search, payment: (await page(id, search)).payment };
}

async function transfer(from: number, token: Hex, to: Hex, amount: bigint): Promise<Hex> {
  // A gas limit with a wallet's margin rather than the bare estimate: a transfer into an address
  // that holds tokens costs about 17,000 gas less than into an empty one, and the worker may sweep
  // the payment address between the estimate and the block (a top-up after an underpayment), so
  // the bare estimate can run out of gas and revert.
  const hash = await buyer(from).writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to, amount], gas: 100_000n });
  const mined = await f.tc.chain.publicClient.waitForTransactionReceipt({ hash });
  assert.equal(mined.status, 'success');
  return hash;
}

const usdc = () => f.tc.chain.usdc.address;
const balance = (token: Hex, of: Hex) => f.tc.chain.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [of] });

async function detail(sh: Shop, id: string) {
  const res = await f.t.call(sh.key, 'GET', `/api/receipts/${id}`);
  assert.equal(res.status, 200);
  return { ...res.body, history: res.body.statusHistory.map((h: { status: string }) => h.status) as string[] };
}

const reaches = (sh: Shop, id: string, status: string, exception?: string | null) =>
  waitFor(async () => {
    const d = await detail(sh, id);
    return d.status === status && (exception === undefined || d.exception === exception) ? d : undefined;
  }, CHAIN_WAIT_MS, `${id} to be ${status}${exception === undefined ? '' : ` (${exception})`}`);

/** Lets the worker run a few passes, so that "still not completed" means something. */
async function settle(): Promise<void> {
  const head = await f.tc.chain.publicClient.getBlockNumber({ cacheTime: 0 });
  await until(() => (f.t.deps.chainWorker!.lastPass?.head ?? 0n) >= head, CHAIN_WAIT_MS, 'the worker to read the newest block');
  const seen = f.t.deps.chainWorker!.lastPass;
  await until(() => f.t.deps.chainWorker!.lastPass !== seen, CHAIN_WAIT_MS, 'two more passes');
}


describe('the payment address', () => {
  test("each receipt has its own address, derived from the merchant, the id and the split, the same on every read and every instance", async () => {
    const sh = await shop();
    const a = await receipt(sh, 'addr-a', 12.34);
    const b = await receipt(sh, 'addr-b', 12.34);
    assert.match(a.payment.payTo, /^0x[0-9a-f]{40}$/);
    assert.notEqual(a.payment.payTo, b.payment.payTo, 'two receipts of equal amount have different addresses');
    assert.notEqual(a.payment.payTo, sh.split, 'the buyer is never asked to pay the split');
    assert.equal(a.payment.splitAddress, sh.split);
    assert.equal(a.payment.amount, '12340000');
    assert.equal(a.payment.paid, '0');
    assert.equal(a.payment.due, '12340000');
    const expected = predictPaymentAddress({ factory: f.tc.chain.paymentFactory!, split: sh.split, salt: paymentSalt(sh.wallet, 'addr-a') });
    assert.equal(a.payment.payTo, expected);
    assert.equal((await page('addr-a', a.search)).payment.payTo, a.payment.payTo);
    // A second instance on the same database and chain answers the same address.
    const other = await startTestApp({ CHAIN: 'dev', DATABASE_URL: f.t.deps.config.databaseUrl ?? '' }, { chain: f.tc.chain }).catch(() => undefined);
    if (other !== undefined && f.t.deps.config.databaseUrl !== undefined) {
      try {
        const res = await other.call(null, 'GET', `/api/pay/addr-a${a.search}`);
        assert.equal(res.body.payment.payTo, a.payment.payTo);
      } finally {
        await other.close();
      }
    } else {
      await other?.close();
    }
    const stored = await waitFor(async () => {
      const d = await detail(sh, 'addr-a');
      return d.payTo ?? undefined;
    }, CHAIN_WAIT_MS, 'the worker to store the address');
    assert.equal(stored, a.payment.payTo);
    const wrongToken = await f.t.call(null, 'GET', '/api/pay/addr-a?t=AAAAAAAAAAAAAAAAAAAAAA');
    assert.equal(wrongToken.status, 404, 'the id alone, or with a wrong token, finds nothing');
  });

  test('orders and terminal receipts get payment addresses too; a receipt made before the split gets one once it exists', async () => {
    const s = await signIn(f.t);
    const key = await f.t.key(s.wallet);
    const early = await f.t.call(key, 'POST', '/api/receipts', { id: 'before-split', lineItems: [{ label: 'x', priceUsd: 1 }], totalUsd: 1 });
    const search = new URL(early.body.paymentUrl).search;
    assert.equal((await page('before-split', search)).payment.payTo, null, 'nothing to pay into before the split');
    const split = await admin(f.t, s, 'POST', '/api/split/deploy', {
      recipients: [
        { address: s.wallet, sharesBps: 9950 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    });
    assert.equal(split.status, 200);
    const payTo = (await page('before-split', search)).payment.payTo;
    assert.match(payTo, /^0x[0-9a-f]{40}$/);
    const terminal = await admin(f.t, s, 'POST', '/api/receipts/terminal', { amountUsd: 2, label: 'Coffee' });
    assert.equal(terminal.status, 200, JSON.stringify(terminal.body));
    const sh = { s, wallet: s.wallet.toLowerCase(), key, split: split.body.split.address };
    const stored = await waitFor(async () => {
      const [x, y] = await Promise.all([detail(sh, 'before-split'), detail(sh, terminal.body.receipt.receiptId)]);
      return x.payTo !== null && y.payTo !== null ? [x.payTo, y.payTo] : undefined;
    }, CHAIN_WAIT_MS, 'addresses stored');
    assert.equal(stored[0], payTo);
    await transfer(0, usdc(), stored[1] as Hex, 2_000_000n);
    const done = await reaches(sh, terminal.body.receipt.receiptId, 'completed');
    assert.deepEqual(done.history, ['generated', 'tx_mined', 'recipient_validated', 'completed']);
  });
});

describe('paying a receipt', () => {
  test('a buyer pays the address; the money is swept into the split; tx_mined → recipient_validated → completed', async () => {
    const sh = await shop();
    const { search, payment } = await receipt(sh, 'pay-1', 25);
    const splitBefore = await balance(usdc(), sh.split);
    const hash = await transfer(0, payment.tokenAddress, payment.payTo, BigInt(payment.due));
    const done = await reaches(sh, 'pay-1', 'completed', null);
    assert.deepEqual(done.history, ['pending', 'tx_mined', 'recipient_validated', 'completed']);
    assert.equal(done.transactionHash, hash.toLowerCase());
    assert.ok(done.transactionTimestamp > 0);
    assert.equal(done.amountPaid, '25000000');
    assert.equal(done.amountDue, '0');
    assert.equal(await balance(usdc(), sh.split) - splitBefore, 25_000_000n, 'the whole payment reached the split');
    assert.equal(await balance(usdc(), payment.payTo), 0n, 'nothing is left at the payment address');
    const st = await f.t.call(sh.key, 'GET', '/api/receipts/status?receiptId=pay-1');
    assert.equal(st.body.transactionHash, hash.toLowerCase());
    assert.equal(st.body.exception, null);
    const p = await page('pay-1', search);
    assert.equal(p.status, 'completed');
    assert.equal(p.payment.due, '0');
    const row = await waitFor(async () => {
      const res = await f.t.call(sh.key, 'GET', '/api/split/transactions');
      return res.body.find((x: { receiptId: string | null }) => x.receiptId === 'pay-1');
    }, CHAIN_WAIT_MS, 'the sweep to be indexed');
    assert.equal(row.amount, 25);
    assert.equal(row.fees, 0.125, 'the platform share is 50 bps');
    const list = await f.t.call(sh.key, 'GET', '/api/receipts');
    const listed = list.body.receipts.find((r: { receiptId: string }) => r.receiptId === 'pay-1');
    assert.equal(listed.status, 'completed');
    assert.equal(listed.amountPaid, '25000000');
    assert.equal(listed.exception, null);
  });

  test("someone else's transaction hash sent through a stranger's payment URL claims nothing", async () => {
    const victim = await shop();
    const attacker = await shop();
    const real = await receipt(victim, 'victim-1', 10);
    const cheap = await receipt(attacker, 'cheap-1', 0.5);
    // The victim pays; the attacker sends the victim's hash as a hint for their own receipt.
    const hash = await transfer(1, usdc(), real.payment.payTo, 10_000_000n);
    const hint = await f.t.call(null, 'POST', `/api/pay/cheap-1/transaction${cheap.search}`, { transactionHash: hash });
    assert.equal(hint.status, 202, 'a hint is accepted, and that is all it is');
    const own = await f.t.call(null, 'POST', `/api/pay/victim-1/transaction${real.search}`, { transactionHash: hash });
    assert.equal(own.status, 202, "the real buyer's own hint is never refused as already used");
    await reaches(victim, 'victim-1', 'completed', null);
    await settle();
    const stolen = await detail(attacker, 'cheap-1');
    assert.equal(stolen.status, 'pending');
    assert.equal(stolen.amountPaid, '0');
  });

  test('a transaction that also holds Approval logs, paying several receipts at once: each gets exactly its own transfer', async () => {
    const sh = await shop();
    const ten = await receipt(sh, 'batch-10', 10);
    const five = await receipt(sh, 'batch-5', 5);
    const contract = await batchPayContract(f.tc, 3);
    const b = buyer(3);
    await f.tc.chain.publicClient.waitForTransactionReceipt({
      hash: await b.writeContract({ address: usdc(), abi: erc20Abi, functionName: 'approve', args: [contract, 15_000_000n] }),
    });
    const hash = await b.writeContract({
      address: contract,
      abi: BATCH_PAY_ABI,
      functionName: 'pay',
      args: [usdc(), [ten.payment.payTo, five.payment.payTo], [10_000_000n, 5_000_000n]],
    });
    const mined = await f.tc.chain.publicClient.waitForTransactionReceipt({ hash });
    assert.ok(mined.logs.length >= 4, 'Approval and Transfer logs in one transaction');
    const d10 = await reaches(sh, 'batch-10', 'completed', null);
    const d5 = await reaches(sh, 'batch-5', 'completed', null);
    assert.equal(d10.amountPaid, '10000000');
    assert.equal(d5.amountPaid, '5000000');
  });

  test('two receipts of equal amount, paid in the opposite order, each complete with their own payment', async () => {
    const sh = await shop();
    const a = await receipt(sh, 'eq-a', 7);
    const b = await receipt(sh, 'eq-b', 7);
    const hb = await transfer(4, usdc(), b.payment.payTo, 7_000_000n);
    const ha = await transfer(5, usdc(), a.payment.payTo, 7_000_000n);
    assert.equal((await reaches(sh, 'eq-a', 'completed')).transactionHash, ha.toLowerCase());
    assert.equal((await reaches(sh, 'eq-b', 'completed')).transactionHash, hb.toLowerCase());
  });

  test('underpaid: tx_mismatch with the remaining due; a top-up at the same address completes it', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'short-1', 5);
    await transfer(1, usdc(), r.payment.payTo, 3_000_000n);
    const short = await reaches(sh, 'short-1', 'tx_mismatch', 'underpaid');
    assert.equal(short.amountPaid, '3000000');
    assert.equal(short.amountDue, '2000000');
    const p = await page('short-1', r.search);
    assert.equal(p.payment.due, '2000000');
    assert.equal(p.payment.payTo, r.payment.payTo, 'the rest is asked for at the same address');
    await transfer(1, usdc(), r.payment.payTo, 2_000_000n);
    const done = await reaches(sh, 'short-1', 'completed', null);
    assert.deepEqual(done.history, ['pending', 'tx_mined', 'tx_mismatch', 'recipient_validated', 'completed']);
    assert.equal(await balance(usdc(), r.payment.payTo), 0n, 'both transfers were swept');
  });

  test('overpaid: completed with exception overpaid, the surplus shown and swept into the split', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'over-1', 4);
    await transfer(2, usdc(), r.payment.payTo, 4_500_000n);
    const done = await reaches(sh, 'over-1', 'completed', 'overpaid');
    assert.equal(done.amountPaid, '4500000');
    assert.equal(done.amountDue, '0');
    assert.equal(await balance(usdc(), r.payment.payTo), 0n);
  });

  test('another ERC-20 with the same symbol and decimals never counts, then the real token completes it', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'fake-1', 3);
    const fake = await deployTestUsdc({ walletClient: buyer(2), publicClient: f.tc.chain.publicClient, holders: [devAccount(2).address], amountEach: 10n ** 12n });
    assert.notEqual(fake.address.toLowerCase(), usdc().toLowerCase());
    await transfer(2, fake.address, r.payment.payTo, 3_000_000n);
    // The worker reads only the token's own logs: the other contract's transfer is never read, so it
    // moves nothing (wrong_token comes from the address's balances, DESIGN "Only the receipt's token is money").
    await settle();
    const wrong = await detail(sh, 'fake-1');
    assert.equal(wrong.amountPaid, '0');
    assert.equal(wrong.amountDue, '3000000');
    assert.ok(['pending', 'tx_mismatch'].includes(wrong.status), wrong.status);
    await transfer(2, usdc(), r.payment.payTo, 3_000_000n);
    await reaches(sh, 'fake-1', 'completed', null);
  });

  test('a transfer straight into the split is shown with receiptId null and completes no receipt', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'direct-1', 4);
    const hash = await transfer(6, usdc(), sh.split, 4_000_000n);
    const row = await waitFor(async () => {
      const res = await f.t.call(sh.key, 'GET', `/api/split/transactions?address=${sh.split}`);
      return res.body.find((x: { transactionHash: string }) => x.transactionHash === hash.toLowerCase());
    }, CHAIN_WAIT_MS, 'the direct transfer to be indexed');
    assert.equal(row.receiptId, null);
    await settle();
    assert.equal((await detail(sh, 'direct-1')).status, 'pending');
    assert.equal((await page('direct-1', r.search)).payment.paid, '0');
  });

  test("after the merchant sets checkout_success, the payment still completes the receipt", async () => {
    const sh = await shop();
    const r = await receipt(sh, 'cs-1', 2);
    const set = await admin(f.t, sh.s, 'POST', '/api/receipts/status', { receiptId: 'cs-1', wallet: sh.s.wallet, status: 'checkout_success' });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.equal((await detail(sh, 'cs-1')).status, 'checkout_success');
    await transfer(7, usdc(), r.payment.payTo, 2_000_000n);
    const done = await reaches(sh, 'cs-1', 'completed');
    // Tracking after payment is history only.
    await f.t.call(null, 'POST', `/api/pay/cs-1/status${r.search}`, { status: 'link_opened' });
    const again = await detail(sh, 'cs-1');
    assert.equal(again.status, 'completed');
    assert.ok(again.history.length > done.history.length);
  });

  test('hints: at most 5 unresolved per receipt, and a flood of random hashes does not delay anyone', async () => {
    const noisy = await shop();
    const quiet = await shop();
    const spam = await receipt(noisy, 'spam-1', 1);
    const random = () => `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')}`;
    for (let i = 0; i < 5; i++) {
      assert.equal((await f.t.call(null, 'POST', `/api/pay/spam-1/transaction${spam.search}`, { transactionHash: random() })).status, 202);
    }
    const sixth = await f.t.call(null, 'POST', `/api/pay/spam-1/transaction${spam.search}`, { transactionHash: random() });
    assert.equal(sixth.status, 429);
    assert.equal(sixth.body.error, 'rate_limited');
    const bad = await f.t.call(null, 'POST', `/api/pay/spam-1/transaction${spam.search}`, { transactionHash: '0x1234' });
    assert.equal(bad.status, 400);
    const r = await receipt(quiet, 'quiet-1', 1);
    await transfer(8, usdc(), r.payment.payTo, 1_000_000n);
    await reaches(quiet, 'quiet-1', 'completed');
    assert.equal((await detail(noisy, 'spam-1')).status, 'pending');
  });
});

describe('expiry and late money', () => {
  test('an expired receipt fails with exception expired; money that arrives later completes it as paid_late', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'late-1', 3, { expiresInMinutes: 5 });
    const p = await page('late-1', r.search);
    assert.equal(p.expiresAt, (await detail(sh, 'late-1')).createdAt + 5 * 60_000, 'five minutes from its creation');
    await f.t.deps.database.db.update(receipts).set({ expiresAt: Date.now() - 1 }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'late-1')));
    const failed = await reaches(sh, 'late-1', 'failed', 'expired');
    assert.equal(failed.amountDue, '3000000');
    await transfer(0, usdc(), r.payment.payTo, 3_000_000n);
    const done = await reaches(sh, 'late-1', 'completed', 'paid_late');
    assert.deepEqual(done.history, ['pending', 'failed', 'tx_mined', 'recipient_validated', 'completed']);
  });

  test("an expired order's stock returns; paid late, it is taken again", async () => {
    const sh = await shop();
    const inv = await f.t.call(sh.key, 'POST', '/api/inventory', { sku: 'mug', name: 'Mug', priceUsd: 6, stockQty: 3, taxable: false });
    assert.ok(inv.status < 300, JSON.stringify(inv.body));
    const order = await f.t.call(sh.key, 'POST', '/api/orders', { items: [{ sku: 'mug', qty: 2 }] });
    assert.equal(order.status, 200, JSON.stringify(order.body));
    const id = order.body.receipt.receiptId as string;
    const stock = async () => (await f.t.call(sh.key, 'GET', '/api/inventory')).body.items.find((i: { sku: string }) => i.sku === 'mug').stockQty;
    assert.equal(await stock(), 1);
    await f.t.deps.database.db.update(receipts).set({ expiresAt: Date.now() - 1 }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
    await reaches(sh, id, 'failed', 'expired');
    assert.equal(await stock(), 3, 'the reserved stock returned');
    const search = new URL(order.body.receipt.paymentUrl).search;
    const p = await page(id, search);
    await transfer(1, usdc(), p.payment.payTo, BigInt(p.payment.due));
    await reaches(sh, id, 'completed', 'paid_late');
    assert.equal(await stock(), 1, 'taken again');
  });
});

describe('webhooks, restarts and reorganisations', () => {
  test('payment_received and completed are delivered, signed, with the amounts', async () => {
    const got: { headers: IncomingHttpHeaders; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        got.push({ headers: req.headers, body });
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const sh = await shop();
      const reg = await admin(f.t, sh.s, 'POST', '/api/admin/webhooks', {
        url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
        events: ['receipt.payment_received', 'receipt.completed'],
      });
      assert.equal(reg.status, 201, JSON.stringify(reg.body));
      const r = await receipt(sh, 'wh-pay', 1.5);
      const hash = await transfer(0, usdc(), r.payment.payTo, 1_500_000n);
      await until(() => got.length >= 2, CHAIN_WAIT_MS, 'both webhooks');
      for (const g of got) {
        const h = g.headers;
        assert.ok(verifyWebhook(reg.body.secret, { id: String(h['webhook-id']), timestamp: String(h['webhook-timestamp']), signature: String(h['webhook-signature']) }, g.body));
      }
      const events = got.map((g) => JSON.parse(g.body));
      const received = events.find((e) => e.type === 'receipt.payment_received');
      const completed = events.find((e) => e.type === 'receipt.completed');
      assert.equal(received.data.receiptId, 'wh-pay');
      assert.equal(received.data.amountPaid, '1500000');
      assert.equal(completed.data.status, 'completed');
      assert.equal(completed.data.exception, null);
      assert.equal(completed.data.amountDue, '0');
      assert.equal(completed.data.transactionHash, hash.toLowerCase());
      assert.equal(completed.data.payTo, r.payment.payTo);
    } finally {
      server.close();
    }
  });

  test('a worker that stops mid-way and a fresh one that takes over complete the receipt exactly once', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'restart-1', 2);
    await f.t.deps.chainWorker!.stop();
    const fresh = () =>
      new ChainWorker({ db: f.t.deps.database.db, chain: f.tc.chain, logger: f.t.deps.logger, confirmations: 1, platformRecipient: PLATFORM, startBlock: 0n, intervalMs: 100 });
    try {
      await transfer(1, usdc(), r.payment.payTo, 2_000_000n);
      await fresh().pass();
      assert.equal((await detail(sh, 'restart-1')).status, 'tx_mined', 'seen, sweep sent, then the worker is gone');
      const second = fresh();
      await second.pass();
      await second.pass();
      await second.pass();
    } finally {
      f.t.deps.chainWorker!.start();
    }
    const done = await reaches(sh, 'restart-1', 'completed');
    assert.equal(done.history.filter((s: string) => s === 'completed').length, 1);
    const events = await f.t.deps.database.db.select({ id: webhookEvents.id }).from(webhookEvents).where(eq(webhookEvents.dedupeKey, 'receipt.completed:restart-1'));
    assert.equal(events.length, 1, 'one receipt.completed event');
  });

  test('a payment reorganised away before its confirmations goes back to pending; paid again, it completes', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'reorg-1', 6);
    const testClient = createTestClient({ chain: f.tc.chain.publicClient.chain, mode: 'anvil', transport: http(f.tc.chain.rpcUrl) });
    await f.t.deps.chainWorker!.stop();
    const deep = new ChainWorker({ db: f.t.deps.database.db, chain: f.tc.chain, logger: f.t.deps.logger, confirmations: 3, platformRecipient: PLATFORM, startBlock: 0n });
    try {
      const snapshot = await testClient.snapshot();
      await transfer(2, usdc(), r.payment.payTo, 6_000_000n);
      await deep.pass();
      await deep.pass();
      const before = await detail(sh, 'reorg-1');
      assert.equal(before.status, 'recipient_validated', 'covered and swept, not yet 3 deep');
      const indexed = await f.t.call(sh.key, 'GET', '/api/split/transactions');
      assert.ok(indexed.body.some((x: { receiptId: string | null }) => x.receiptId === 'reorg-1'));
      await testClient.revert({ id: snapshot });
      await testClient.mine({ blocks: 4 });
      await deep.pass();
      const after = await detail(sh, 'reorg-1');
      assert.equal(after.status, 'pending');
      assert.equal(after.amountPaid, '0');
      assert.ok(!after.history.includes('completed'));
      const gone = await f.t.call(sh.key, 'GET', '/api/split/transactions');
      assert.ok(!gone.body.some((x: { receiptId: string | null }) => x.receiptId === 'reorg-1'), 'the removed sweep left the split transactions');
      // The buyer pays again on the chain that won.
      await transfer(2, usdc(), r.payment.payTo, 6_000_000n);
      for (let i = 0; i < 3; i++) await deep.pass();
      await testClient.mine({ blocks: 3 });
      await deep.pass();
      await deep.pass();
      assert.equal((await detail(sh, 'reorg-1')).status, 'completed');
    } finally {
      f.t.deps.chainWorker!.start();
    }
  });

  test('with no key to pay the gas, the money waits at the payment address until anyone sweeps it into the split', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'nogas-1', 3);
    await f.t.deps.chainWorker!.stop();
    const gasless = new ChainWorker({
      db: f.t.deps.database.db,
      chain: { ...f.tc.chain, walletClient: undefined },
      logger: f.t.deps.logger,
      confirmations: 1,
      platformRecipient: PLATFORM,
      startBlock: 0n,
    });
    try {
      await transfer(4, usdc(), r.payment.payTo, 3_000_000n);
      await gasless.pass();
      await gasless.pass();
      assert.equal(gasless.sweepsWaiting, 1);
      assert.equal((await detail(sh, 'nogas-1')).status, 'tx_mined', 'not completed while the money is not in the split');
      assert.equal(await balance(usdc(), r.payment.payTo), 3_000_000n, 'the money is safe at the address');
      // The merchant sweeps from their own wallet with the transaction the admin app hands over
      // (any account may send it; the money can only go to the split).
      const offer = await admin(f.t, sh.s, 'GET', '/api/admin/receipts/nogas-1/sweep');
      assert.equal(offer.status, 200, JSON.stringify(offer.body));
      assert.equal(offer.body.waiting, '3000000');
      assert.equal(offer.body.payTo, r.payment.payTo);
      assert.equal(offer.body.transaction.to, f.tc.chain.paymentFactory!.toLowerCase());
      const stranger = await signIn(f.t);
      assert.equal((await admin(f.t, stranger, 'GET', '/api/admin/receipts/nogas-1/sweep')).status, 404, "another merchant's receipt is not found");
      const hash = await buyer(5).sendTransaction({ to: offer.body.transaction.to, data: offer.body.transaction.data });
      await f.tc.chain.publicClient.waitForTransactionReceipt({ hash });
      await gasless.pass();
      const done = await detail(sh, 'nogas-1');
      assert.equal(done.status, 'completed');
      assert.equal(gasless.sweepsWaiting, 0);
    } finally {
      f.t.deps.chainWorker!.start();
    }
  });

  test("a recipient's release appears as a split transaction", async () => {
    const sh = await shop();
    await transfer(7, usdc(), sh.split, 1_000_000n);
    const platformWallet = buyer(8);
    const hash = await platformWallet.writeContract({ address: sh.split, abi: paymentSplitterAbi, functionName: 'release', args: [usdc(), sh.s.wallet as Hex] });
    await f.tc.chain.publicClient.waitForTransactionReceipt({ hash });
    const rel = await waitFor(async () => {
      const res = await f.t.call(sh.key, 'GET', `/api/split/transactions?address=${sh.s.wallet}`);
      return res.body.find((x: { transactionHash: string }) => x.transactionHash === hash.toLowerCase());
    }, CHAIN_WAIT_MS, 'the release to be indexed');
    assert.equal(rel.amount, 0.995, 'the merchant share of 1 USDC');
    assert.equal(rel.fees, 0);
  });
});

test('every receipt these tests wrote stores the views the database renders from its rows', async () => {
  assert.deepEqual(await staleReceiptViews(f.t.deps.database.db), []);
  assert.deepEqual(await unrenderedReceipts(f.t.deps.database.db), []);
});
