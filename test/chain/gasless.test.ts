/**
 * Pay without gas: POST /api/pay/<id>/authorization relays a buyer's EIP-3009 authorization through
 * payAndSweep. A buyer with USDC and no ETH pays; the receipt completes like any other payment. The
 * checks refuse, before any gas is spent, what cannot work or pays the wrong amount.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { erc20Abi, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { tokenDomain, transferAuthorizationTypedData } from '../../src/chain/eip3009.ts';
import { factoryAddress, paymentSalt, predictPaymentAddress } from '../../src/chain/payment-address.ts';
import { testUsdcAbi } from '../../src/chain/test-usdc.ts';
import { receipts } from '../../src/db/schema.ts';
import type { TestApp } from '../helpers/app.ts';
import { CHAIN_WAIT_MS, deployShop, postReceipt, startChainApp, startTestChain, PLATFORM, type Shop, type TestChain } from './helpers.ts';
import { waitFor } from '../helpers/wait.ts';
import { admin, newAccount, signIn } from '../helpers/session.ts';

const monitor = newAccount();
let tc: TestChain;
let t: TestApp;
const payer = privateKeyToAccount(generatePrivateKey());
before(async () => {
  tc = await startTestChain();
  // A superadmin reads /healthz's details (the relays' gas).
  t = await startChainApp(tc.chain, { CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM, SUPERADMIN_WALLETS: monitor.address });
  t.deps.startWorkers();
  const hash = await tc.chain.walletClient!.writeContract({ address: tc.chain.usdc.address, abi: testUsdcAbi, functionName: 'mint', args: [payer.address, 100_000_000n] });
  await tc.chain.publicClient.waitForTransactionReceipt({ hash });
});
after(async () => {
  await t?.close();
  await tc?.close();
});

const pub = () => tc.chain.publicClient;
const usdcBalance = (of: Hex) => pub().readContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [of] });

const shop = (): Promise<Shop> => deployShop(t);

async function receipt(sh: Shop, id: string, totalUsd: number) {
  const search = await postReceipt(t, sh, id, totalUsd);
  await waitFor(async () => {
    const [r] = await t.deps.database.db.select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
    return r?.payAddress != null ? true : undefined;
  }, CHAIN_WAIT_MS, 'the address to be stored');
  const page = (await t.call(null, 'GET', `/api/pay/${id}${search}`)).body as { expiresAt: number; payment: { payTo: Hex; due: string } };
  return { id, search, page };
}

async function sign(to: Hex, value: bigint, opts: { validBefore?: number; signer?: typeof payer; as?: typeof payer } = {}) {
  const who = opts.as ?? payer;
  const domain = await tokenDomain(pub(), tc.chain.usdc.address);
  const nowS = Math.floor(Date.now() / 1000);
  const nonce: Hex = `0x${randomBytes(32).toString('hex')}`;
  const message = {
    from: who.address,
    to,
    value,
    validAfter: 0n,
    validBefore: BigInt(opts.validBefore ?? nowS + 1800),
    nonce,
  };
  const signature = await (opts.signer ?? who).signTypedData(transferAuthorizationTypedData(domain, message));
  return { from: who.address, value: value.toString(), validAfter: 0, validBefore: Number(message.validBefore), nonce: message.nonce, signature };
}

/** /healthz's relay totals, read by a superadmin (before the first relay is counted: zeros). */
async function healthRelays(): Promise<{ relays: number; reverted: number; gasUsed: string; weiSpent: string }> {
  const res = await admin(t, await signIn(t, monitor), 'GET', '/healthz');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.notEqual(res.body.payments?.relays, undefined, JSON.stringify(res.body));
  return res.body.payments.relays;
}

const post = (r: { id: string; search: string }, body: unknown) => t.call(null, 'POST', `/api/pay/${r.id}/authorization${r.search}`, body);

describe('POST /api/pay/:id/authorization', () => {
  test('a buyer with USDC and no ETH pays: one relayed transaction, the receipt completes, the payer spent no gas', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'gasless-1', 7);
    assert.equal(await pub().getBalance({ address: payer.address }), 0n);
    const body = await sign(r.page.payment.payTo, BigInt(r.page.payment.due));
    const before = await healthRelays();
    const res = await post(r, body);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const mined = await pub().waitForTransactionReceipt({ hash: res.body.transactionHash });
    assert.equal(mined.status, 'success');
    assert.equal(mined.to?.toLowerCase(), factoryAddress(2).toLowerCase());
    await waitFor(async () => ((await t.call(sh.key, 'GET', '/api/receipts/gasless-1')).body.status === 'completed' ? true : undefined), CHAIN_WAIT_MS, 'completion');
    assert.equal(await usdcBalance(sh.split), 7_000_000n);
    assert.equal(await pub().getBalance({ address: payer.address }), 0n);

    // The service paid the gas, and /healthz's details say how much: this relay's gas and fee, to the unit.
    await t.deps.relayGas!.settled();
    const spent = await healthRelays();
    assert.deepEqual(spent, {
      relays: before.relays + 1,
      reverted: before.reverted,
      gasUsed: (BigInt(before.gasUsed) + mined.gasUsed).toString(),
      weiSpent: (BigInt(before.weiSpent) + mined.gasUsed * mined.effectiveGasPrice).toString(),
    });
    assert.ok(mined.gasUsed > 50_000n, `a transfer and a sweep in one transaction: ${mined.gasUsed} gas`);
    const anonymous = await t.call(null, 'GET', '/healthz');
    assert.equal(anonymous.body.payments, undefined, 'only with the edge secret or a superadmin session');

    // Replayed: the nonce is used; and nothing is due any more.
    const again = await post(r, body);
    assert.equal(again.status, 409, JSON.stringify(again.body));
    assert.match(again.body.error, /nothing_due|authorization_used/);
  });

  test('refused before any gas is spent: another value, a wrong signer, another address, a window too long or closing, too little money', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'gasless-2', 5);
    const due = BigInt(r.page.payment.due);
    const nonce = await pub().getTransactionCount({ address: tc.chain.walletClient!.account.address });
    const cases: [string, unknown, number, string][] = [
      ['another value', await sign(r.page.payment.payTo, due - 1n), 400, 'invalid_input'],
      ['signed by someone else', await sign(r.page.payment.payTo, due, { signer: privateKeyToAccount(generatePrivateKey()) }), 400, 'invalid_signature'],
      ['signed to another address', await sign(sh.split, due), 400, 'invalid_signature'],
      ['valid past expiry + 1 h', await sign(r.page.payment.payTo, due, { validBefore: Math.floor(r.page.expiresAt / 1000) + 3601 }), 400, 'invalid_input'],
      ['closing now', await sign(r.page.payment.payTo, due, { validBefore: Math.floor(Date.now() / 1000) + 5 }), 400, 'invalid_input'],
    ];
    for (const [what, body, status, error] of cases) {
      const res = await post(r, body);
      assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, error, what);
    }
    // A tampered value in the body (the signature was for the due amount) is a wrong signature too.
    const tampered = { ...(await sign(r.page.payment.payTo, due)), from: privateKeyToAccount(generatePrivateKey()).address };
    assert.equal((await post(r, tampered)).body.error, 'invalid_signature');
    assert.equal(await pub().getTransactionCount({ address: tc.chain.walletClient!.account.address }), nonce, 'the service sent nothing');
    assert.equal(await usdcBalance(r.page.payment.payTo), 0n);
    // Each attempt costs the service reads: at most 10 per receipt a minute.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await post(r, await sign(r.page.payment.payTo, due - 1n))).status);
    assert.ok(statuses.includes(429), `the receipt's attempts are limited: ${statuses.join(',')}`);
  });

  test('a payer without the money, and a receipt addressed through version 1, are refused', async () => {
    const sh = await shop();
    const r = await receipt(sh, 'gasless-3', 500);
    const poor = await post(r, await sign(r.page.payment.payTo, BigInt(r.page.payment.due), { as: privateKeyToAccount(generatePrivateKey()) }));
    assert.equal(poor.status, 400, JSON.stringify(poor.body));
    assert.equal(poor.body.error, 'insufficient_balance');

    const old = await receipt(sh, 'gasless-v1', 1);
    const v1 = predictPaymentAddress({ factory: factoryAddress(1), split: sh.split, salt: paymentSalt(sh.wallet, 'gasless-v1') });
    await t.deps.database.db.update(receipts).set({ payAddress: v1, payFactory: null }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'gasless-v1')));
    const res = await post(old, await sign(v1, 1_000_000n, { as: privateKeyToAccount(generatePrivateKey()) }));
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error, 'gasless_unavailable');
  });
});
