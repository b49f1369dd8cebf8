/**
 * ETH and other tokens at payment addresses reach the split without the merchant
 * (src/payments/other-sweeps.ts): the chain worker sweeps what the balance reads found, through
 * the sweeper's rules (balance first, one sweep in flight per address, the keeper's nonce, rows in
 * the sweeps table), unless it is worth less than its gas. On the dev chain with the worker running
 * as in production; nobody but buyers and strangers acts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { erc20Abi, type Address, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { NATIVE_TOKEN } from '../../src/chain/payment-address.ts';
import { deployTestUsdc } from '../../src/chain/test-usdc.ts';
import { receipts } from '../../src/db/schema.ts';
import { PAGE_CHECK_EVERY_MS } from '../../src/payments/other-money.ts';
import { ETH_SWEEP_GAS_MULTIPLE, OTHER_SWEEP_GAS } from '../../src/payments/other-sweeps.ts';
import { sweepsOf } from '../../src/payments/sweeper.ts';
import type { TestApp } from '../helpers/app.ts';
import { until, waitFor } from '../helpers/wait.ts';
import { CHAIN_WAIT_MS, deployShop, devWallet, PLATFORM, postReceipt, startChainApp, startTestChain, type Shop, type TestChain } from './helpers.ts';

let tc: TestChain;
let t: TestApp;
let strangerToken: Address;
before(async () => {
  tc = await startTestChain();
  strangerToken = (await deployTestUsdc({ walletClient: tc.chain.walletClient!, publicClient: tc.chain.publicClient, holders: [devAccount(2).address], amountEach: 10n ** 12n })).address;
  t = await startChainApp(tc.chain, { CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM, BALANCE_TOKENS: strangerToken, SWEEP_DUST_USD: '1' });
  t.deps.startWorkers();
});
after(async () => {
  await t?.close();
  await tc?.close();
});

const pub = () => tc.chain.publicClient;
const db = () => t.deps.database.db;

async function row(sh: Shop, id: string) {
  const [r] = await db().select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
  assert.ok(r);
  return r;
}

/** A receipt whose address the worker stored; its payment page's query string and address. */
async function addressed(sh: Shop, id: string, totalUsd = 4): Promise<{ search: string; payTo: Hex }> {
  const search = await postReceipt(t, sh, id, totalUsd);
  await waitFor(async () => ((await row(sh, id)).payAddress !== null ? true : undefined), CHAIN_WAIT_MS, `${id}'s address to be stored`);
  const page = await t.call(null, 'GET', `/api/pay/${id}${search}`);
  assert.equal(page.status, 200);
  return { search, payTo: page.body.payment.payTo };
}

/** The buyer opens the payment page again, past the page-read throttle: the worker reads the address's balances. */
async function reopen(sh: Shop, id: string, search: string): Promise<void> {
  await until(async () => (await row(sh, id)).balancesCheckDue === null, CHAIN_WAIT_MS, 'no read pending');
  await db().update(receipts).set({ balancesCheckedAt: Date.now() - PAGE_CHECK_EVERY_MS - 1 }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
  assert.equal((await t.call(null, 'GET', `/api/pay/${id}${search}`)).status, 200);
}

async function sendEth(from: number, to: Hex, value: bigint): Promise<void> {
  const hash = await devWallet(tc, from).sendTransaction({ to, value });
  assert.equal((await pub().waitForTransactionReceipt({ hash })).status, 'success');
}

async function transfer(token: Address, from: number, to: Hex, amount: bigint): Promise<void> {
  const hash = await devWallet(tc, from).writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to, amount], gas: 100_000n });
  assert.equal((await pub().waitForTransactionReceipt({ hash })).status, 'success');
}

const ethAt = (a: Hex) => pub().getBalance({ address: a });
const tokenAt = (token: Address, a: Hex) => pub().readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [a] });
const reaches = (what: string, read: () => Promise<bigint>, amount: bigint) =>
  waitFor(async () => ((await read()) === amount ? true : undefined), CHAIN_WAIT_MS, what);

/** Several worker passes after now (the worker runs on its own). */
async function passes(n: number): Promise<void> {
  const w = t.deps.chainWorker!;
  for (let i = 0; i < n; i++) {
    const before = w.lastPass;
    await until(async () => w.lastPass !== before, CHAIN_WAIT_MS, 'a worker pass');
  }
  await w.sweeper.idle();
}

describe('ETH at a payment address reaches the split with no merchant action', () => {
  test('sent before the forwarder exists: swept (the sweep deploys the forwarder), recorded as a sweep, the receipt still waits for its token', async () => {
    const sh = await deployShop(t);
    const r = await addressed(sh, 'eth-early');
    assert.equal(await pub().getCode({ address: r.payTo }), undefined, 'no forwarder there yet');
    await sendEth(3, r.payTo, 5n * 10n ** 16n);
    await reopen(sh, 'eth-early', r.search);
    await reaches('the ETH to reach the split', () => ethAt(sh.split), 5n * 10n ** 16n);
    assert.equal(await ethAt(r.payTo), 0n);
    assert.notEqual(await pub().getCode({ address: r.payTo }), undefined, 'the forwarder deployed by the sweep');
    await until(async () => (await sweepsOf(db(), r.payTo)).every((s) => s.state === 'mined'), CHAIN_WAIT_MS, 'the sweep row mined');
    const rows = await sweepsOf(db(), r.payTo);
    assert.deepEqual(rows.map((s) => [s.token, s.amountUnits, s.state]), [[NATIVE_TOKEN, (5n * 10n ** 16n).toString(), 'mined']], 'one sweep, of ETH, the balance read before it');
    const receipt = (await t.call(sh.key, 'GET', '/api/receipts/eth-early')).body as { status: string; exception: string | null; amountPaid: string };
    assert.deepEqual([receipt.status, receipt.exception, receipt.amountPaid], ['pending', 'wrong_token', '0'], 'ETH is never the receipt’s money');
  });

  test('sent after the forwarder exists (the receipt paid and swept): swept too', async () => {
    const sh = await deployShop(t);
    const r = await addressed(sh, 'eth-late', 3);
    await transfer(tc.chain.usdc.address, 1, r.payTo, 3_000_000n);
    await waitFor(async () => ((await row(sh, 'eth-late')).status === 'completed' ? true : undefined), CHAIN_WAIT_MS, 'the receipt to complete');
    assert.notEqual(await pub().getCode({ address: r.payTo }), undefined);
    await sendEth(3, r.payTo, 2n * 10n ** 16n);
    await reopen(sh, 'eth-late', r.search);
    await reaches('the ETH to reach the split', () => ethAt(sh.split), 2n * 10n ** 16n);
    assert.equal(await tokenAt(tc.chain.usdc.address, sh.split), 3_000_000n);
    assert.equal((await row(sh, 'eth-late')).status, 'completed', 'the ETH changes nothing of the completed receipt but its exception');
  });

  test('ETH worth less than its gas waits at the address, costing nothing; a top-up makes it worth a sweep and all of it goes', async () => {
    const sh = await deployShop(t);
    const r = await addressed(sh, 'eth-dust');
    const block = await pub().getBlock({ blockTag: 'latest' });
    const floor = ETH_SWEEP_GAS_MULTIPLE * OTHER_SWEEP_GAS * 2n * (block.baseFeePerGas ?? 0n);
    const dust = 10n ** 9n;
    assert.ok(dust < floor, `1 gwei is below ${floor} wei`);
    await sendEth(3, r.payTo, dust);
    await reopen(sh, 'eth-dust', r.search);
    await waitFor(async () => ((await row(sh, 'eth-dust')).otherMoney !== null ? true : undefined), CHAIN_WAIT_MS, 'the ETH found');
    await passes(4);
    assert.deepEqual(await sweepsOf(db(), r.payTo), [], 'no sweep sent');
    assert.equal(await ethAt(r.payTo), dust, 'it waits at the address');
    assert.equal(await ethAt(sh.split), 0n);

    await sendEth(3, r.payTo, 10n ** 17n);
    await reopen(sh, 'eth-dust', r.search);
    await reaches('all of it to reach the split', () => ethAt(sh.split), 10n ** 17n + dust);
    assert.equal((await sweepsOf(db(), r.payTo)).length, 1, 'in one sweep');
  });
});

describe('a stranger’s token (BALANCE_TOKENS) at a payment address', () => {
  test('found by a hint, swept into the split; less than SWEEP_DUST_USD of it waits', async () => {
    const sh = await deployShop(t);
    const r = await addressed(sh, 'tok-sweep');
    const hash = await devWallet(tc, 2).writeContract({ address: strangerToken, abi: erc20Abi, functionName: 'transfer', args: [r.payTo, 7_000_000n], gas: 100_000n });
    await pub().waitForTransactionReceipt({ hash });
    const hint = await t.call(null, 'POST', `/api/pay/tok-sweep/transaction${r.search}`, { transactionHash: hash });
    assert.equal(hint.status, 202, JSON.stringify(hint.body));
    await reaches('the token to reach the split', () => tokenAt(strangerToken, sh.split), 7_000_000n);
    assert.equal(await tokenAt(strangerToken, r.payTo), 0n);
    assert.deepEqual((await row(sh, 'tok-sweep')).otherMoney, { [strangerToken.toLowerCase()]: '7000000' }, 'still shown as what arrived');

    const small = await addressed(sh, 'tok-dust');
    await transfer(strangerToken, 2, small.payTo, 500_000n);
    await reopen(sh, 'tok-dust', small.search);
    await waitFor(async () => ((await row(sh, 'tok-dust')).otherMoney !== null ? true : undefined), CHAIN_WAIT_MS, 'the token found');
    await passes(3);
    assert.deepEqual(await sweepsOf(db(), small.payTo), [], '50 cents of it is not worth a sweep');
    assert.equal(await tokenAt(strangerToken, small.payTo), 500_000n);
  });
});
