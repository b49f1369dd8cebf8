/**
 * Refunds in the admin app, in a real browser on a real dev chain. The merchant's browser wallet
 * (an injected EIP-1193 provider whose signatures and transactions come from a dev account in
 * Node) signs in, opens a paid receipt, finds the buyer prefilled with the address that paid and
 * a warning to confirm it, and sends the refund from the wallet: a transfer of the token to the
 * buyer, then recorded with its hash and verified by the server. A refund recorded without a
 * transaction shows as unverified; the list shows "Partly refunded" and "Refunded"; at 390 px
 * nothing scrolls sideways. The same page's Sweep card shows what waits at the payment address and
 * sends the sweep of ETH found there into the split from the same wallet; the route's refusals
 * show in words.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Browser, type Page } from 'playwright-core';
import { createWalletClient, decodeFunctionData, erc20Abi, http, type Address, type Hex } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import type { TestApp } from '../helpers/app.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';
import { PLATFORM, type TestChain } from '../chain/helpers.ts';
import { eventually, waitFor } from '../helpers/wait.ts';
import { contextOptions, RENDER_MS, screenshot, skipReason, useChainBrowser } from './harness.ts';

if (skipReason) console.log(skipReason);

/** The merchant's wallet sends refunds; the buyer pays receipts. */
const MERCHANT = 1;
const BUYER = 2;

describe('refunds in the admin app', { skip: skipReason, timeout: 180_000 }, () => {
  let tc: TestChain;
  let t: TestApp;
  let base: string;
  let browser: Browser;
  /** The merchant's session from Node, for setting up the split and reading back. */
  let s: Session;
  let key: string;

  useChainBrowser({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM }, async (started) => {
    ({ tc, t, base, browser } = started);
    // Signs the same EIP-712 challenge as a private-key account does.
    s = await signIn(t, devAccount(MERCHANT) as unknown as PrivateKeyAccount);
    const split = await admin(t, s, 'POST', '/api/split/deploy', {
      recipients: [
        { address: s.wallet, sharesBps: 9950 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    });
    assert.equal(split.status, 200, JSON.stringify(split.body));
    key = await t.key(s.wallet);
  });

  const walletOf = (i: number) => createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(i) });
  const usdc = () => tc.chain.usdc.address;
  const balanceOf = (who: string) => tc.chain.publicClient.readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [who as Address] });

  async function detail(id: string) {
    const res = await t.call(key, 'GET', `/api/receipts/${encodeURIComponent(id)}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  }

  /** A receipt the buyer paid in full from their own wallet, completed. */
  async function paidReceipt(id: string, totalUsd: number) {
    const created = await t.call(key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Desk lamp', priceUsd: totalUsd }], totalUsd });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const page = await t.call(null, 'GET', `/api/pay/${id}${new URL(created.body.paymentUrl).search}`);
    assert.equal(page.status, 200, JSON.stringify(page.body));
    const hash = await walletOf(BUYER).writeContract({
      address: usdc(),
      abi: erc20Abi,
      functionName: 'transfer',
      args: [page.body.payment.payTo, BigInt(page.body.payment.due)],
    });
    assert.equal((await tc.chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');
    return waitFor(async () => {
      const d = await detail(id);
      return d.status === 'completed' ? d : undefined;
    }, 30_000, `${id} to be completed`);
  }

  interface MerchantPage {
    page: Page;
    /** Transactions the page asked the wallet to send. */
    sent: { to: Hex; data: Hex; hash: Hex }[];
    problems: string[];
  }

  /**
   * A browser context with the merchant's wallet injected: it signs typed data and sends real
   * transactions on the dev chain from the merchant's dev account, and answers receipts of them.
   */
  async function merchantPage(phone = false): Promise<MerchantPage> {
    const context = await browser.newContext(contextOptions(phone, base));
    context.setDefaultTimeout(15_000);
    const account = devAccount(MERCHANT);
    const wallet = walletOf(MERCHANT);
    const m: MerchantPage = { page: undefined as unknown as Page, sent: [], problems: [] };
    await context.exposeFunction('__splitlineTestSign', async (json: string) => {
      const typed = JSON.parse(json) as { domain: any; types: Record<string, unknown>; primaryType: string; message: any };
      const { EIP712Domain: _domain, ...types } = typed.types;
      return account.signTypedData({ domain: typed.domain, types: types as any, primaryType: typed.primaryType, message: typed.message });
    });
    await context.exposeFunction('__splitlineTestSend', async (json: string) => {
      const tx = JSON.parse(json) as { to: Hex; data: Hex; value?: Hex };
      const hash = await wallet.sendTransaction({ to: tx.to, data: tx.data, value: BigInt(tx.value ?? '0x0') });
      m.sent.push({ to: tx.to, data: tx.data, hash });
      return hash;
    });
    await context.exposeFunction('__splitlineTestReceipt', async (hash: Hex) => {
      const receipt = await tc.chain.publicClient.getTransactionReceipt({ hash }).catch(() => null);
      return receipt === null ? null : { transactionHash: receipt.transactionHash, status: receipt.status === 'success' ? '0x1' : '0x0' };
    });
    await context.addInitScript({
      content: `(() => {
        const address = ${JSON.stringify(account.address)};
        const fail = (code, message) => Object.assign(new Error(message), { code });
        window.ethereum = {
          async request({ method, params }) {
            switch (method) {
              case 'eth_requestAccounts':
              case 'eth_accounts':
                return [address];
              case 'eth_chainId':
                return '0x7a69';
              case 'eth_signTypedData_v4':
                if (String(params[0]).toLowerCase() !== address.toLowerCase()) throw fail(4100, 'unknown account');
                return window.__splitlineTestSign(params[1]);
              case 'eth_sendTransaction':
                if (String(params[0].from).toLowerCase() !== address.toLowerCase()) throw fail(4100, 'unknown account');
                return window.__splitlineTestSend(JSON.stringify(params[0]));
              case 'eth_getTransactionReceipt':
                return window.__splitlineTestReceipt(params[0]);
              default:
                throw fail(4200, 'unsupported method ' + method);
            }
          },
          on() {},
          removeListener() {},
        };
      })();`,
    });
    m.page = await context.newPage();
    m.page.on('pageerror', (err) => m.problems.push(`page error: ${err.message}`));
    m.page.on('console', (msg) => {
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) m.problems.push(`console: ${msg.text()}`);
    });
    await m.page.goto('/admin/');
    await m.page.getByRole('button', { name: 'Sign in with wallet' }).click();
    await m.page.getByTestId('signed-in-wallet').waitFor();
    return m;
  }

  async function fits(page: Page, what: string) {
    const { scrollWidth, innerWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
    assert.ok(scrollWidth <= innerWidth, `${what}: the page is ${scrollWidth}px wide on a ${innerWidth}px screen`);
  }

  test('the form is prefilled with the payer and warns; "Send refund from my wallet" transfers and records a verified refund', async () => {
    const paid = await paidReceipt('lamp-1', 10);
    const payer = devAccount(BUYER).address.toLowerCase();
    assert.equal(paid.payer, payer);
    const m = await merchantPage();
    await m.page.goto('/admin/receipts/lamp-1');
    const form = m.page.getByTestId('refund-form');
    await form.waitFor();
    assert.equal(await form.getByLabel('Buyer wallet').inputValue(), payer, 'the buyer is prefilled with the address that paid');
    assert.equal(await m.page.getByTestId('receipt-payer').innerText(), payer);
    const warning = form.getByTestId('payer-warning');
    assert.match(await warning.innerText(), /exchange or a smart wallet/);
    assert.match(await warning.innerText(), /Confirm the refund address with the buyer/);
    assert.equal(await form.getByLabel('Amount (USD)').inputValue(), '10.00');
    await screenshot(m.page, 'refund-form');

    const before = await balanceOf(payer);
    await form.getByLabel('Amount (USD)').fill('4');
    await form.getByRole('button', { name: 'Send refund from my wallet' }).click();
    await m.page.getByText('Refunded $4.00; $4.00 refunded in all, $6.00 remains. The transfer was verified on the chain.').waitFor();
    const row = m.page.getByTestId('refund-row');
    await eventually(async () => assert.equal(await row.count(), 1), RENDER_MS, 'the refund to be listed');
    assert.equal(await row.getAttribute('data-verified'), 'true');
    assert.match(await row.innerText(), /Verified/);
    assert.match(await row.innerText(), /\$4\.00/);

    // The wallet was asked for exactly transfer(payer, 4 USDC) on the token.
    assert.equal(m.sent.length, 1);
    assert.equal(m.sent[0]!.to.toLowerCase(), usdc().toLowerCase());
    const call = decodeFunctionData({ abi: erc20Abi, data: m.sent[0]!.data });
    assert.equal(call.functionName, 'transfer');
    assert.deepEqual([String(call.args[0]).toLowerCase(), call.args[1]], [payer, 4_000_000n]);
    assert.equal((await balanceOf(payer)) - before, 4_000_000n, 'the buyer received the refund');

    const d = await detail('lamp-1');
    assert.equal(d.status, 'completed', 'a partly refunded receipt keeps its status');
    assert.equal(d.refundedUsd, 4);
    assert.deepEqual(
      d.refunds.map((r: Record<string, unknown>) => [r.usd, r.buyer, r.txHash, r.verified]),
      [[4, payer, m.sent[0]!.hash.toLowerCase(), true]],
    );
    // The form now offers what remains, to the same buyer, with the warning still there.
    await eventually(async () => assert.equal(await form.getByLabel('Amount (USD)').inputValue(), '6.00'), RENDER_MS, 'the form to offer what remains');
    assert.equal(await form.getByLabel('Buyer wallet').inputValue(), payer);
    await screenshot(m.page, 'refund-verified');

    // The list: "Partly refunded" beside the status, and a filter for it.
    await m.page.goto('/admin/receipts');
    const listed = m.page.getByTestId('receipt-row').filter({ hasText: 'lamp-1' });
    await listed.waitFor();
    assert.match(await listed.innerText(), /Partly refunded/i);
    assert.match(await listed.innerText(), /Paid/, 'completed, in words');
    assert.equal(await listed.locator('[data-status="completed"]').getAttribute('title'), 'completed');
    await m.page.getByLabel('Status').selectOption('partly_refunded');
    await eventually(async () => assert.equal(await m.page.getByTestId('receipt-row').count(), 1), RENDER_MS, 'only the partly refunded receipt to be listed');
    await m.page.getByLabel('Status').selectOption('refunded');
    await m.page.getByText('No receipt matches.').waitFor();
    assert.deepEqual(m.problems, []);
  });

  test('at 390 px: the rest recorded without a transaction is unverified, the receipt is refunded, and nothing scrolls sideways', async () => {
    await paidReceipt('lamp-2', 12);
    const m = await merchantPage(true);
    await m.page.goto('/admin/receipts/lamp-2');
    const form = m.page.getByTestId('refund-form');
    await form.getByTestId('payer-warning').waitFor();
    await fits(m.page, 'the refund form');
    await screenshot(m.page, 'phone-refund-form');

    await form.getByLabel('Amount (USD)').fill('5');
    await form.getByRole('button', { name: 'Send refund from my wallet' }).click();
    await m.page.getByText('Refunded $5.00; $5.00 refunded in all, $7.00 remains.').waitFor();
    await form.getByRole('button', { name: 'Record refund without a transaction' }).click();
    await m.page.getByText('Fully refunded.', { exact: true }).waitFor();
    const rows = m.page.getByTestId('refund-row');
    await eventually(async () => assert.equal(await rows.count(), 2), RENDER_MS, 'both refunds to be listed');
    assert.deepEqual([await rows.nth(0).getAttribute('data-verified'), await rows.nth(1).getAttribute('data-verified')], ['true', 'false']);
    assert.match(await rows.nth(1).innerText(), /Unverified/);
    await fits(m.page, 'the receipt with its refunds');
    await screenshot(m.page, 'phone-refund-done');
    const d = await detail('lamp-2');
    assert.equal(d.status, 'refunded');
    assert.equal(d.refundedUsd, 12);
    assert.equal(m.sent.length, 1, 'recording without a transaction sends nothing');

    await m.page.goto('/admin/receipts');
    const listed = m.page.getByTestId('receipt-row').filter({ hasText: 'lamp-2' });
    await listed.waitFor();
    assert.match(await listed.innerText(), /refunded/i);
    assert.doesNotMatch(await listed.innerText(), /Partly/);
    await fits(m.page, 'the receipts list');
    assert.deepEqual(m.problems, []);
  });

  test('Sweep: ETH sent to a paid receipt’s payment address is swept into the split from the wallet; the route’s refusals show in words', async () => {
    await paidReceipt('lamp-3', 7);
    const offer = await admin(t, s, 'GET', '/api/admin/receipts/lamp-3/sweep?token=eth');
    assert.equal(offer.status, 200, JSON.stringify(offer.body));
    const { payTo, splitAddress } = offer.body as { payTo: Address; splitAddress: Address };
    // Below the worker's dust rule for ETH (ten times its sweep's gas), so only the button moves it.
    const eth = 123_400_000_000_000n;
    const gift = await walletOf(BUYER).sendTransaction({ to: payTo, value: eth });
    assert.equal((await tc.chain.publicClient.waitForTransactionReceipt({ hash: gift })).status, 'success');

    const m = await merchantPage();
    // The route's refusals first, answered in place of the server's: each in words, with no button.
    const refuse = (status: number, error: string, message: string) =>
      m.page.route(/\/api\/admin\/receipts\/lamp-3\/sweep\?token=eth$/, (route) =>
        route.fulfill({ status, contentType: 'application/json', body: JSON.stringify({ error, message }) }),
      );
    const card = m.page.getByTestId('receipt-sweep');
    const ethLine = card.locator('[data-testid="sweep-line"][data-token="eth"]');
    await refuse(400, 'invalid_input', 'this payment address was made by forwarder version 1, which sweeps tokens only');
    await m.page.goto('/admin/receipts/lamp-3');
    await ethLine.getByTestId('sweep-problem').waitFor();
    assert.equal(await ethLine.innerText(), 'ETH cannot be swept from this payment address: this payment address was made by forwarder version 1, which sweeps tokens only.');
    await m.page.unrouteAll();
    await refuse(503, 'chain_unavailable', 'This instance runs without a chain');
    await m.page.reload();
    await ethLine.getByTestId('sweep-problem').waitFor();
    assert.equal(await ethLine.innerText(), 'The chain cannot be read right now, so what waits in ETH is unknown (This instance runs without a chain).');
    assert.equal(await card.getByRole('button', { name: 'Sweep ETH' }).count(), 0);
    await m.page.unrouteAll();

    // The real answer: the ETH waiting, with its 18 decimals, and the receipt's token beside it.
    await m.page.reload();
    await ethLine.getByTestId('sweep-waiting').waitFor();
    assert.equal(await ethLine.getByTestId('sweep-waiting').innerText(), '0.0001234 ETH');
    assert.match(await card.locator('[data-testid="sweep-line"][data-token="receipt"]').innerText(), /^\d+(\.\d+)? USDC waiting/);
    await screenshot(m.page, 'receipt-sweep');

    const splitBefore = await tc.chain.publicClient.getBalance({ address: splitAddress });
    const sentBefore = m.sent.length;
    await ethLine.getByRole('button', { name: 'Sweep ETH' }).click();
    const notice = card.getByTestId('sweep-sent');
    await notice.waitFor({ timeout: 30_000 });
    // Refreshed once mined: nothing waits, no button.
    await ethLine.getByTestId('sweep-waiting').filter({ hasText: /^0 ETH$/ }).waitFor({ timeout: 30_000 });
    assert.equal(await ethLine.getByRole('button').count(), 0);

    // The wallet sent exactly the transaction the route answered, and the split grew by exactly the ETH.
    assert.equal(m.sent.length, sentBefore + 1);
    const sent = m.sent.at(-1)!;
    assert.equal(sent.to.toLowerCase(), offer.body.transaction.to);
    assert.equal(sent.data, offer.body.transaction.data);
    assert.equal(await notice.innerText(), `Sweep of 0.0001234 ETH sent: transaction ${sent.hash}.`);
    assert.equal((await tc.chain.publicClient.getTransactionReceipt({ hash: sent.hash })).status, 'success');
    assert.equal((await tc.chain.publicClient.getBalance({ address: splitAddress })) - splitBefore, eth, 'the split holds exactly the ETH swept');
    assert.equal(await tc.chain.publicClient.getBalance({ address: payTo }), 0n, 'nothing stays at the payment address');
    await screenshot(m.page, 'receipt-swept');
    assert.deepEqual(m.problems, []);
  });
});
