/**
 * Pay without gas on the hosted payment page, in headless Chromium on a real dev chain: a buyer
 * whose wallet holds USDC and no ETH clicks "Pay … without gas", signs one EIP-3009
 * TransferWithAuthorization (eth_signTypedData_v4, no transaction), and the page posts it to
 * POST /api/pay/<id>/authorization, shows the relayed transaction and follows the receipt to
 * completed. The buyer's ETH stays 0. Refusals from the route are shown as one clear sentence;
 * a receipt the service cannot relay for gets no offer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { decodeFunctionData, erc20Abi, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { tokenDomain } from '../../src/chain/eip3009.ts';
import { paymentForwarderFactoryV2Abi } from '../../src/chain/payment-address.ts';
import { testUsdcAbi } from '../../src/chain/test-usdc.ts';
import { receipts } from '../../src/db/schema.ts';
import type { TestApp } from '../helpers/app.ts';
import { CHAIN_WAIT_MS, deployShop, type Shop, type TestChain } from '../chain/helpers.ts';
import { injectStrictWallet, screenshot, skipReason, startChainBrowser, type ChainBrowser } from './harness.ts';
import { waitFor } from '../helpers/wait.ts';

if (skipReason) console.log(skipReason);

/** The worker and the page's polling each take a moment; a state is awaited this long at most. */
const STATE_MS = 30_000;

describe('payment page: pay without gas', { skip: skipReason, timeout: 300_000 }, () => {
  let cb: ChainBrowser;
  let tc: TestChain;
  let t: TestApp;
  let siteUrl: string;

  before(async () => {
    cb = await startChainBrowser();
    ({ tc, t, siteUrl } = cb);
  });
  after(async () => {
    await cb?.close();
  });

  const pub = () => tc.chain.publicClient;
  const usdc = () => tc.chain.usdc.address;
  const usdcOf = (who: Hex) => pub().readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [who] });

  /** A new account holding `units` of the test USDC and no ETH at all. */
  async function buyerAccount(units: bigint): Promise<PrivateKeyAccount> {
    const account = privateKeyToAccount(generatePrivateKey());
    if (units > 0n) {
      const hash = await tc.chain.walletClient!.writeContract({ address: usdc(), abi: testUsdcAbi, functionName: 'mint', args: [account.address, units] });
      await pub().waitForTransactionReceipt({ hash });
    }
    assert.equal(await pub().getBalance({ address: account.address }), 0n, 'the buyer holds no ETH');
    return account;
  }

  /** A receipt of `totalUsd` whose payment address is stored (what relaying needs); its URL and page answer. */
  async function receipt(sh: Shop, id: string, totalUsd: number) {
    const res = await t.call(sh.key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Oat latte', priceUsd: totalUsd }], totalUsd });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const url = new URL(res.body.paymentUrl);
    await waitFor(
      async () => {
        const [r] = await t.deps.database.db.select().from(receipts).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, id)));
        return r?.payAddress != null ? true : undefined;
      },
      CHAIN_WAIT_MS,
      'the payment address to be stored',
    );
    const view = await t.call(null, 'GET', `/api${url.pathname}${url.search}`);
    assert.equal(view.status, 200, JSON.stringify(view.body));
    return { url: res.body.paymentUrl as string, view: view.body };
  }

  /** A browser with the strict wallet (starts on mainnet, adds the dev chain when asked) for `account`; it sends no transactions. */
  async function open(account: PrivateKeyAccount): Promise<{ page: Page; problems: string[]; posts: { status: number; body: string }[] }> {
    const context = await cb.context();
    await injectStrictWallet(context, account, { checkRpc: false });
    const page = await context.newPage();
    const problems: string[] = [];
    const posts: { status: number; body: string }[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.push(`console: ${msg.text()}`);
    });
    page.on('response', (res) => {
      if (res.request().method() === 'POST' && /\/authorization\?/.test(res.url())) posts.push({ status: res.status(), body: res.request().postData() ?? '' });
    });
    return { page, problems, posts };
  }

  const walletCalls = (page: Page) => page.evaluate(() => (window as unknown as { __walletCalls: string[] }).__walletCalls);
  const phase = (page: Page, name: string, status?: string) =>
    page.locator(`[data-testid="payment-status"][data-phase="${name}"]${status === undefined ? '' : `[data-status="${status}"]`}`).waitFor({ timeout: STATE_MS });

  test('a buyer with USDC and no ETH signs once; the page shows the relayed transaction and the receipt completes; the buyer’s ETH stays 0', async () => {
    const sh = await deployShop(t, { origin: siteUrl });
    const { url, view } = await receipt(sh, 'gasless-page-1', 12);
    const domain = await tokenDomain(pub(), usdc());
    assert.deepEqual(view.payment.gasless, { name: domain.name, version: domain.version }, 'the pay view offers it, with the domain read from the token');
    const account = await buyerAccount(20_000_000n);
    const b = await open(account);
    await b.page.goto(url);
    await phase(b.page, 'unpaid');
    const offer = b.page.getByRole('button', { name: 'Pay 12 USDC without gas' });
    await offer.waitFor();
    await screenshot(b.page, 'pay-gasless-offer');
    await offer.click();

    await phase(b.page, 'completed', 'completed');
    // One authorization, posted once, and the page showed the transaction it answered with.
    assert.equal(b.posts.length, 1);
    assert.equal(b.posts[0]!.status, 202);
    const body = JSON.parse(b.posts[0]!.body) as { from: string; value: string; validAfter: number; validBefore: number; nonce: Hex };
    assert.equal(body.from.toLowerCase(), account.address.toLowerCase());
    assert.equal(body.value, '12000000');
    assert.equal(body.validAfter, 0);
    const nowS = Math.floor(Date.now() / 1000);
    assert.ok(body.validBefore > nowS && body.validBefore <= nowS + 30 * 60, `validBefore ${body.validBefore}: at most half an hour away`);
    const detail = (await t.call(sh.key, 'GET', '/api/receipts/gasless-page-1')).body;
    assert.deepEqual([detail.status, detail.exception, detail.amountPaid], ['completed', null, '12000000']);
    const hash = detail.transactionHash as Hex;
    assert.match(await b.page.getByTestId('payment-status').innerText(), new RegExp(hash, 'i'), 'the transaction hash is shown');
    // The relayed transaction: the service's key called payAndSweep with the buyer's authorization.
    const tx = await pub().getTransaction({ hash });
    assert.equal(tx.from.toLowerCase(), tc.chain.walletClient!.account.address.toLowerCase());
    const call = decodeFunctionData({ abi: paymentForwarderFactoryV2Abi, data: tx.input });
    assert.equal(call.functionName, 'payAndSweep');
    const auth = (call.args as readonly unknown[])[3] as { from: Hex; value: bigint; nonce: Hex };
    assert.deepEqual([auth.from.toLowerCase(), auth.value, auth.nonce], [account.address.toLowerCase(), 12_000_000n, body.nonce]);

    // The buyer signed and sent nothing: no ETH spent, 12 USDC less; the split holds them.
    const calls = await walletCalls(b.page);
    assert.deepEqual(calls.filter((c) => c.startsWith('eth_signTypedData_v4') || c.startsWith('eth_sendTransaction')), ['eth_signTypedData_v4']);
    assert.equal(await pub().getBalance({ address: account.address }), 0n, 'the buyer’s ETH stays 0');
    assert.equal(await usdcOf(account.address), 8_000_000n);
    assert.equal(await usdcOf(sh.split), 12_000_000n);
    assert.equal(await b.page.getByRole('button', { name: /without gas/ }).count(), 0, 'paid: no offer any more');
    await screenshot(b.page, 'pay-gasless-completed');
    assert.deepEqual(b.problems, []);
  });

  test('refusals are one clear sentence with the service’s words folded: too little USDC; the receipt stays payable', async () => {
    const sh = await deployShop(t, { origin: siteUrl });
    const { url } = await receipt(sh, 'gasless-page-2', 5);
    const poor = await buyerAccount(1_000_000n);
    const b = await open(poor);
    await b.page.goto(url);
    await b.page.getByRole('button', { name: 'Pay 5 USDC without gas' }).click();
    const note = b.page.getByTestId('pay-error');
    await note.waitFor();
    assert.equal(await note.getByTestId('error-summary').innerText(), 'The account in your wallet holds too little USDC for this payment.');
    await note.getByTestId('error-detail').locator('summary').click();
    assert.match(await note.getByTestId('error-detail').locator('pre').innerText(), /^400 insufficient_balance: from holds 1000000 base units/);
    assert.deepEqual(
      b.posts.map((p) => p.status),
      [400],
    );
    await phase(b.page, 'unpaid');
    assert.equal(await b.page.getByRole('button', { name: 'Pay 5 USDC without gas' }).isEnabled(), true, 'the buyer may try again');
    assert.equal(await pub().getBalance({ address: poor.address }), 0n);
    await screenshot(b.page, 'pay-gasless-refused');
    assert.deepEqual(b.problems, []);
  });

  test('a receipt whose address predates gasless payments (version 1) gets no offer; the transfer is still offered', async () => {
    const sh = await deployShop(t, { origin: siteUrl });
    const { url } = await receipt(sh, 'gasless-page-3', 3);
    await t.deps.database.db.update(receipts).set({ payFactory: null }).where(and(eq(receipts.wallet, sh.wallet), eq(receipts.id, 'gasless-page-3')));
    const u = new URL(url);
    assert.equal((await t.call(null, 'GET', `/api${u.pathname}${u.search}`)).body.payment.gasless, null);
    const b = await open(await buyerAccount(3_000_000n));
    await b.page.goto(url);
    await b.page.getByRole('button', { name: 'Pay 3 USDC with a browser wallet' }).waitFor();
    assert.equal(await b.page.getByRole('button', { name: /without gas/ }).count(), 0);
    assert.deepEqual(b.problems, []);
  });
});
