/**
 * Payments end to end on the real dev chain, through the HTTP API: a buyer pays with test USDC,
 * the chain worker verifies, the receipt completes, the webhook arrives signed.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createTestClient, createWalletClient, encodeFunctionData, erc20Abi, http, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { deployTestUsdc } from '../../src/chain/test-usdc.ts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import { verifyWebhook } from '../../src/webhooks/sign.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';
import type { TestApp } from '../helpers/app.ts';
import { PLATFORM, startChainApp, startTestChain, waitFor, type TestChain } from './helpers.ts';

let tc: TestChain;
let t: TestApp;
before(async () => {
  tc = await startTestChain();
  t = await startChainApp(tc.chain, { WEBHOOK_ALLOW_PRIVATE: 'true', CONFIRMATIONS: '1' });
  t.deps.startWorkers();
});
after(async () => {
  await t?.close();
  await tc?.close();
});

const buyer = (i: number) =>
  createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(i) });

interface Shop {
  s: Session;
  key: string;
  split: Hex;
}

async function shop(): Promise<Shop> {
  const s = await signIn(t);
  const res = await admin(t, s, 'POST', '/api/split/deploy', {
    recipients: [
      { address: s.wallet, sharesBps: 9950 },
      { address: PLATFORM, sharesBps: 50 },
    ],
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.match(res.body.split.address, /^0x[0-9a-f]{40}$/, 'the split contract was deployed');
  return { s, key: await t.key(s.wallet), split: res.body.split.address };
}

async function receipt(sh: Shop, id: string, totalUsd: number) {
  const res = await t.call(sh.key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Item', priceUsd: totalUsd }], totalUsd });
  assert.equal(res.status, 201);
  const url = new URL(res.body.paymentUrl);
  const page = await t.call(null, 'GET', `/api/pay/${id}${url.search}`);
  assert.equal(page.status, 200);
  return { search: url.search, payment: page.body.payment as { tokenAddress: Hex; splitAddress: Hex; amount: string; chainId: number } };
}

async function transfer(from: number, token: Hex, to: Hex, amount: bigint): Promise<Hex> {
  const hash = await buyer(from).writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to, amount] });
  await tc.chain.publicClient.waitForTransactionReceipt({ hash });
  return hash;
}

async function statusOf(sh: Shop, id: string): Promise<{ status: string; history: string[]; body: any }> {
  const res = await t.call(sh.key, 'GET', `/api/receipts/${id}`);
  return { status: res.body.status, history: res.body.statusHistory.map((h: { status: string }) => h.status), body: res.body };
}

const until = (sh: Shop, id: string, status: string) =>
  waitFor(`${id} to be ${status}`, async () => ((await statusOf(sh, id)).status === status ? true : undefined), 20_000);

describe('paying a receipt', () => {
  test('the payment page quote names the token, the split and the amount in base units', async () => {
    const sh = await shop();
    const { payment } = await receipt(sh, 'q-1', 12.34);
    assert.equal(payment.chainId, 31337);
    assert.equal(payment.tokenAddress, tc.chain.usdc.address.toLowerCase());
    assert.equal(payment.splitAddress, sh.split);
    assert.equal(payment.amount, '12340000');
    const wrongToken = await t.call(null, 'GET', '/api/pay/q-1?t=AAAAAAAAAAAAAAAAAAAAAA');
    assert.equal(wrongToken.status, 404, 'the id alone, or with a wrong token, finds nothing');
  });

  test('a funded account pays; the receipt goes tx_mined → recipient_validated → completed', async () => {
    const sh = await shop();
    const { search, payment } = await receipt(sh, 'pay-1', 25);
    const hash = await transfer(0, payment.tokenAddress, payment.splitAddress, BigInt(payment.amount));
    const sub = await t.call(null, 'POST', `/api/pay/pay-1/transaction${search}`, { transactionHash: hash });
    assert.equal(sub.status, 202);
    await until(sh, 'pay-1', 'completed');
    const { history, body } = await statusOf(sh, 'pay-1');
    assert.deepEqual(history, ['pending', 'tx_mined', 'recipient_validated', 'completed']);
    assert.equal(body.transactionHash, hash.toLowerCase());
    assert.ok(body.transactionTimestamp > 0);
    const st = await t.call(sh.key, 'GET', '/api/receipts/status?receiptId=pay-1');
    assert.equal(st.body.transactionHash, hash.toLowerCase());
    const txs = await waitFor('the payment to be indexed', async () => {
      const res = await t.call(sh.key, 'GET', '/api/split/transactions');
      return res.body.find((x: { receiptId: string | null }) => x.receiptId === 'pay-1');
    });
    assert.equal(txs.amount, 25);
    assert.equal(txs.fees, 0.125, 'the platform share is 50 bps');
  });

  for (const [name, pay] of [
    ['underpaid', async (p: { tokenAddress: Hex; splitAddress: Hex; amount: string }) => transfer(1, p.tokenAddress, p.splitAddress, BigInt(p.amount) - 1n)],
    ['to the wrong address', async (p: { tokenAddress: Hex; splitAddress: Hex; amount: string }) => transfer(1, p.tokenAddress, devAccount(5).address, BigInt(p.amount))],
    [
      'in the wrong token',
      async (p: { tokenAddress: Hex; splitAddress: Hex; amount: string }) => {
        const other = await deployTestUsdc({
          walletClient: buyer(2) as never,
          publicClient: tc.chain.publicClient,
          holders: [devAccount(2).address],
          amountEach: 10n ** 12n,
        });
        return transfer(2, other.address, p.splitAddress, BigInt(p.amount));
      },
    ],
  ] as const) {
    test(`a payment ${name} gives tx_mismatch and a signed webhook`, async () => {
      const sh = await shop();
      const id = `mm-${name.replace(/\W+/g, '-')}`;
      const { search, payment } = await receipt(sh, id, 5);
      const hash = await pay(payment);
      assert.equal((await t.call(null, 'POST', `/api/pay/${id}/transaction${search}`, { transactionHash: hash })).status, 202);
      await until(sh, id, 'tx_mismatch');
      assert.deepEqual((await statusOf(sh, id)).history, ['pending', 'tx_mined', 'tx_mismatch']);
    });
  }

  test('a reverted transaction gives failed', async () => {
    const sh = await shop();
    const { search, payment } = await receipt(sh, 'rev-1', 3);
    // An account with no test USDC (a fresh one funded with gas only) cannot transfer: it reverts.
    const poor = buyer(3);
    const hash = await poor.sendTransaction({
      to: payment.tokenAddress,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payment.splitAddress, 10n ** 30n] }),
      gas: 100_000n,
    });
    const mined = await tc.chain.publicClient.waitForTransactionReceipt({ hash });
    assert.equal(mined.status, 'reverted');
    await t.call(null, 'POST', `/api/pay/rev-1/transaction${search}`, { transactionHash: hash });
    await until(sh, 'rev-1', 'failed');
  });

  test('one transfer pays at most one receipt: reusing its hash for a second receipt is refused', async () => {
    const sh = await shop();
    const a = await receipt(sh, 'dup-a', 7);
    const b = await receipt(sh, 'dup-b', 7);
    const hash = await transfer(4, a.payment.tokenAddress, a.payment.splitAddress, BigInt(a.payment.amount));
    await t.call(null, 'POST', `/api/pay/dup-a/transaction${a.search}`, { transactionHash: hash });
    await until(sh, 'dup-a', 'completed');
    const again = await t.call(null, 'POST', `/api/pay/dup-b/transaction${b.search}`, { transactionHash: hash });
    assert.equal(again.status, 409);
    assert.equal(again.body.error, 'transaction_already_used');
    assert.notEqual((await statusOf(sh, 'dup-b')).status, 'completed');
  });

  test('a payment made without a submitted hash is matched when exactly one receipt fits', async () => {
    const sh = await shop();
    const { payment } = await receipt(sh, 'auto-1', 9.99);
    await receipt(sh, 'other-amount', 10);
    await transfer(5, payment.tokenAddress, payment.splitAddress, BigInt(payment.amount));
    await until(sh, 'auto-1', 'completed');
    assert.equal((await statusOf(sh, 'other-amount')).status, 'pending');
  });

  test('an ambiguous unsolicited payment stays unmatched and visible to the merchant', async () => {
    const sh = await shop();
    const one = await receipt(sh, 'amb-1', 4);
    await receipt(sh, 'amb-2', 4);
    const hash = await transfer(6, one.payment.tokenAddress, one.payment.splitAddress, BigInt(one.payment.amount));
    const row = await waitFor('the transfer to be indexed', async () => {
      const res = await t.call(sh.key, 'GET', `/api/split/transactions?address=${sh.split}`);
      return res.body.find((x: { transactionHash: string }) => x.transactionHash === hash.toLowerCase());
    });
    assert.equal(row.receiptId, null);
    assert.equal((await statusOf(sh, 'amb-1')).status, 'pending');
    assert.equal((await statusOf(sh, 'amb-2')).status, 'pending');
  });

  test("a recipient's release appears as a split transaction", async () => {
    const sh = await shop();
    await transfer(7, tc.chain.usdc.address, sh.split, 1_000_000n);
    const platformWallet = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(8) });
    const hash = await platformWallet.writeContract({
      address: sh.split,
      abi: paymentSplitterAbi,
      functionName: 'release',
      args: [tc.chain.usdc.address, sh.s.wallet as Hex],
    });
    await tc.chain.publicClient.waitForTransactionReceipt({ hash });
    const rel = await waitFor('the release to be indexed', async () => {
      const res = await t.call(sh.key, 'GET', `/api/split/transactions?address=${sh.s.wallet}`);
      return res.body.find((x: { transactionHash: string }) => x.transactionHash === hash.toLowerCase());
    });
    assert.equal(rel.amount, 0.995, 'the merchant share of 1 USDC');
    assert.equal(rel.fees, 0);
  });
});

describe('webhooks and restarts', () => {
  test('receipt.completed is delivered and its signature verifies', async () => {
    const got: { headers: IncomingHttpHeaders; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        got.push({ headers: req.headers, body });
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const sh = await shop();
    const reg = await admin(t, sh.s, 'POST', '/api/admin/webhooks', {
      url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
      events: ['receipt.completed'],
    });
    const { search, payment } = await receipt(sh, 'wh-pay', 1.5);
    const hash = await transfer(0, payment.tokenAddress, payment.splitAddress, BigInt(payment.amount));
    await t.call(null, 'POST', `/api/pay/wh-pay/transaction${search}`, { transactionHash: hash });
    await waitFor('the webhook', async () => (got.length > 0 ? true : undefined));
    server.close();
    const h = got[0]!.headers;
    assert.ok(verifyWebhook(reg.body.secret, { id: String(h['webhook-id']), timestamp: String(h['webhook-timestamp']), signature: String(h['webhook-signature']) }, got[0]!.body));
    const payload = JSON.parse(got[0]!.body);
    assert.equal(payload.type, 'receipt.completed');
    assert.equal(payload.data.receiptId, 'wh-pay');
    assert.equal(payload.data.transactionHash, hash.toLowerCase());
  });

  test('a restart mid-verification still completes the receipt exactly once', async () => {
    const sh = await shop();
    const { search, payment } = await receipt(sh, 'restart-1', 2);
    await t.deps.chainWorker!.stop();
    const hash = await transfer(1, payment.tokenAddress, payment.splitAddress, BigInt(payment.amount));
    await t.call(null, 'POST', `/api/pay/restart-1/transaction${search}`, { transactionHash: hash });
    // Advance one step by hand, then "crash": the worker is dropped mid-way.
    await t.deps.chainWorker!.verifier.pass();
    assert.equal((await statusOf(sh, 'restart-1')).status, 'recipient_validated');
    const { ChainWorker } = await import('../../src/payments/worker.ts');
    const fresh = new ChainWorker({
      db: t.deps.database.db,
      chain: tc.chain,
      logger: t.deps.logger,
      confirmations: 1,
      platformRecipient: PLATFORM,
      startBlock: 0n,
      intervalMs: 100,
    });
    fresh.start();
    try {
      await until(sh, 'restart-1', 'completed');
      await fresh.verifier.pass();
      await fresh.verifier.pass();
    } finally {
      await fresh.stop();
      t.deps.chainWorker!.start();
    }
    const { history } = await statusOf(sh, 'restart-1');
    assert.equal(history.filter((s) => s === 'completed').length, 1);
  });

  test('a payment reorganised away before its confirmations does not complete', async () => {
    const sh = await shop();
    const { search, payment } = await receipt(sh, 'reorg-1', 6);
    const testClient = createTestClient({ chain: tc.chain.publicClient.chain, mode: 'anvil', transport: http(tc.chain.rpcUrl) });
    await t.deps.chainWorker!.stop();
    const snapshot = await testClient.snapshot();
    const hash = await transfer(2, payment.tokenAddress, payment.splitAddress, BigInt(payment.amount));
    await t.call(null, 'POST', `/api/pay/reorg-1/transaction${search}`, { transactionHash: hash });
    const { PaymentVerifier } = await import('../../src/payments/verifier.ts');
    const deep = new PaymentVerifier({ db: t.deps.database.db, chain: tc.chain, confirmations: 3, logger: t.deps.logger });
    await deep.pass();
    assert.equal((await statusOf(sh, 'reorg-1')).status, 'recipient_validated');
    await testClient.revert({ id: snapshot });
    await testClient.mine({ blocks: 3 });
    await deep.pass();
    await deep.pass();
    const after = await statusOf(sh, 'reorg-1');
    assert.equal(after.status, 'pending');
    assert.ok(!after.history.includes('completed'));
    t.deps.chainWorker!.start();
  });
});
