/**
 * Signing in as a new merchant would, from a fresh clone, on the dev chain: a wallet as strict as
 * MetaMask (it starts on another chain, does not know the dev chain, and signs EIP-712 data only
 * for its active chain) is switched to the service's chain, the chain added with the service's own
 * RPC URL when the wallet does not know it, then signs. The sign-in page shows the dev chain's
 * details and a test account to import. Wallet errors are one sentence, with the wallet's own
 * words folded and wrapped. Each at desktop (1280 px) and phone (390 px) width.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { startTestChain, type TestChain } from '../chain/helpers.ts';
import { RENDER_MS, screenshot, setUpSplit, skipReason, startHarness, type Harness, type Merchant } from './harness.ts';
import { until } from '../helpers/wait.ts';

if (skipReason) console.log(skipReason);

const WIDTHS = [
  { name: 'desktop', phone: false },
  { name: 'phone', phone: true },
] as const;

/** An empty account's answer to eth_sendTransaction, as a wallet relays the node's error with the whole request. */
const EMPTY_ACCOUNT_ERROR =
  'insufficient funds for gas * price + value: address 0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc have 0 want 1006510000000000\n' +
  'Request Arguments:\n  from: 0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc\n  to: 0x5FbDB2315678afecb367f032d93F642f64180aa3\n' +
  `  data: 0xa9059cbb${'00'.repeat(12)}${'22'.repeat(20)}${'0'.repeat(56)}4c4b40${'deadbeef'.repeat(400)}\n` +
  `Details: ${'insufficient funds for gas * price + value '.repeat(30)}\nVersion: viem@2.57.20`;

async function walletCalls(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __walletCalls: string[] }).__walletCalls);
}

/** Nothing scrolls sideways: the document is no wider than the screen. */
async function fits(page: Page, what: string): Promise<void> {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
  assert.ok(scrollWidth <= innerWidth, `${what}: the page is ${scrollWidth}px wide on a ${innerWidth}px screen`);
}

describe('sign-in on the dev chain with a strict wallet', { skip: skipReason, timeout: 240_000 }, () => {
  let tc: TestChain;
  let h: Harness;
  before(async () => {
    tc = await startTestChain();
    h = await startHarness({}, { chain: tc.chain });
  });
  after(async () => {
    await h?.close();
    await tc?.close();
  });

  function noProblems(m: Merchant) {
    assert.deepEqual(m.problems, [], 'no script errors or CSP violations');
  }

  for (const width of WIDTHS) {
    test(`${width.name}: the page shows the dev chain and a test account; the wallet is moved to the chain, which is added, then signs`, async () => {
      const m = await h.open({ phone: width.phone, strictWallet: {} });
      await m.page.goto('/admin/');
      const dev = m.page.getByTestId('dev-chain');
      await dev.waitFor();
      assert.equal(await dev.getByTestId('dev-chain-name').innerText(), 'Splitline dev chain');
      assert.equal(await dev.getByTestId('dev-chain-id').innerText(), '31337');
      assert.equal(await dev.getByTestId('dev-chain-rpc').innerText(), `${h.base}/dev/rpc`);
      const first = devAccount(0);
      assert.equal(await dev.getByTestId('dev-account-address').innerText(), first.address);
      const key = await dev.getByTestId('dev-account-key').innerText();
      assert.match(key, /^0x[0-9a-f]{64}$/);
      assert.equal(key, `0x${Buffer.from(first.getHdKey().privateKey!).toString('hex')}`, 'the private key of that address');
      assert.match(await dev.getByTestId('dev-test-only').innerText(), /Test only, never real money/);
      await fits(m.page, 'sign-in with the dev chain details');
      await screenshot(m.page, `signin-dev-chain-${width.name}`);

      // The wallet is strict: asked to sign for the dev chain while it is on mainnet, it refuses.
      const refused = await m.page.evaluate(async (address) => {
        const typedData = { domain: { name: 'Splitline', version: '1', chainId: 31337 }, types: {}, primaryType: 'Login', message: {} };
        try {
          await (window as any).ethereum.request({ method: 'eth_signTypedData_v4', params: [address, JSON.stringify(typedData)] });
          return 'signed';
        } catch (err) {
          return (err as Error).message;
        }
      }, m.account.address);
      assert.match(refused, /must match the active chainId/);

      await m.page.getByRole('button', { name: 'Sign in with wallet' }).click();
      const badge = m.page.getByTestId('signed-in-wallet');
      await badge.waitFor();
      assert.equal(await badge.getAttribute('title'), m.wallet);
      assert.deepEqual((await walletCalls(m.page)).slice(1), [
        'eth_requestAccounts',
        'eth_chainId',
        'wallet_switchEthereumChain:4902',
        'wallet_addEthereumChain',
        'eth_chainId',
        'wallet_switchEthereumChain',
        'eth_signTypedData_v4',
      ]);
      const added = await m.page.evaluate(() => (window as unknown as { __addedChains: { chainId: string; rpcUrls: string[]; chainName: string }[] }).__addedChains);
      assert.equal(added.length, 1);
      assert.equal(added[0]!.chainId, '0x7a69');
      assert.deepEqual(added[0]!.rpcUrls, [`${h.base}/dev/rpc`], "the service's own RPC URL");
      assert.equal(added[0]!.chainName, 'Splitline dev chain');
      assert.equal((await m.api('GET', '/api/auth/me')).status, 200, 'the session is open');
      noProblems(m);
    });

    test(`${width.name}: the person rejects the network switch: one sentence, nothing signed, ready to try again`, async () => {
      const m = await h.open({ phone: width.phone, strictWallet: { rejectSwitch: true } });
      await m.page.goto('/admin/');
      await m.page.getByTestId('dev-chain').waitFor();
      await m.page.getByRole('button', { name: 'Sign in with wallet' }).click();
      const error = m.page.getByTestId('signin-error');
      await error.waitFor();
      assert.equal(await error.innerText(), 'You declined the switch to Splitline dev chain in your wallet.');
      assert.equal(await error.getByTestId('error-detail').count(), 0, 'nothing more to unfold');
      const calls = await walletCalls(m.page);
      assert.ok(calls.includes('wallet_switchEthereumChain:4001'), calls.join(', '));
      assert.ok(!calls.some((c) => c.startsWith('eth_signTypedData_v4')), 'no signature was asked for');
      assert.equal(await m.page.getByRole('button', { name: 'Sign in with wallet' }).isEnabled(), true);
      assert.equal(await m.page.getByTestId('signed-in-wallet').count(), 0);
      await fits(m.page, 'the rejected switch');
      await screenshot(m.page, `signin-switch-rejected-${width.name}`);
      noProblems(m);
    });

    test(`${width.name}: an empty account's long wallet error is one sentence, its details folded and wrapped`, async () => {
      const m = await h.open({ phone: width.phone, strictWallet: { sendError: EMPTY_ACCOUNT_ERROR } });
      await m.page.goto('/admin/');
      await m.page.getByRole('button', { name: 'Sign in with wallet' }).click();
      await m.page.getByTestId('signed-in-wallet').waitFor();
      await setUpSplit(m);
      const sale = await m.api('POST', '/api/receipts/terminal', { amountUsd: 5, label: 'Scarf' });
      assert.equal(sale.status, 200, JSON.stringify(sale.body));
      await m.page.goto(`/admin/receipts/${encodeURIComponent(sale.body.receipt.receiptId)}`);
      const form = m.page.getByTestId('refund-form');
      await form.getByLabel('Buyer wallet').fill(`0x${'22'.repeat(20)}`);
      await form.getByRole('button', { name: 'Send refund from my wallet' }).click();
      const error = m.page.getByTestId('refund-error');
      await error.waitFor({ timeout: 20_000 });
      const summary = await error.getByTestId('error-summary').innerText();
      assert.equal(summary, 'The account in your wallet has too little ETH to pay the network fee for the refund; add ETH to it and try again.');
      const details = error.getByTestId('error-detail');
      assert.equal(await details.getAttribute('open'), null, 'the details start folded');
      await fits(m.page, 'the folded wallet error');
      await details.locator('summary').click();
      const text = await details.locator('pre').innerText();
      assert.match(text, /^insufficient funds for gas \* price \+ value: address 0x9965/);
      assert.match(text, /deadbeefdeadbeef/);
      const box = await error.boundingBox();
      const viewport = m.page.viewportSize()!;
      assert.ok(box !== null && box.x >= 0 && box.x + box.width <= viewport.width, 'the note stays on the screen');
      await fits(m.page, 'the unfolded wallet error');
      await screenshot(m.page, `refund-wallet-error-${width.name}`);
      assert.equal((await m.api('GET', `/api/receipts/${encodeURIComponent(sale.body.receipt.receiptId)}`)).body.refunds.length, 0, 'nothing recorded');
      await until(() => form.getByRole('button', { name: 'Send refund from my wallet' }).isEnabled(), RENDER_MS, 'the form to be ready again');
      noProblems(m);
    });
  }
});
