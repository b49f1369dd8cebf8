/**
 * The Split page's balances in a real browser on a real dev chain: what the split holds for each
 * recipient and what it released, and a recipient releasing its share from its own browser
 * wallet (an injected EIP-1193 wallet that starts on another chain, adds the dev chain when asked,
 * and sends real transactions from a dev account through a function exposed from Node).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createWalletClient, erc20Abi, http, toHex, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import { ensureWebBuild } from '../../scripts/ensure-web-build.ts';
import type { TestApp } from '../helpers/app.ts';
import { admin, signIn } from '../helpers/session.ts';
import { PLATFORM, startChainApp, startTestChain, type TestChain } from '../chain/helpers.ts';
import { CHROMIUM, injectStrictWallet, PHONE, screenshot, skipReason, type AddedChain } from './harness.ts';

if (skipReason) console.log(skipReason);

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe('split page: balances and release', { skip: skipReason, timeout: 240_000 }, () => {
  let tc: TestChain;
  let t: TestApp;
  let base: string;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  before(async () => {
    await ensureWebBuild((line) => console.log(line));
    tc = await startTestChain();
    t = await startChainApp(tc.chain, { CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });
    t.deps.startWorkers();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('the app is not listening on a TCP port');
    base = `http://127.0.0.1:${address.port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 30_000 });
  });
  after(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await t?.close();
    await tc?.close();
  });

  /** A dev account as a local account, so it can both sign in (typed data) and pay gas. */
  const devKeyAccount = (i: number) => privateKeyToAccount(toHex(devAccount(i).getHdKey().privateKey!));

  /**
   * The signed-in merchant's browser, with the harness's strict wallet for dev account `walletOf`
   * injected: it starts on mainnet, adds the dev chain when asked (switching to it; the RPC URL,
   * SITE_URL's, is not checked) and sends eth_sendTransaction to the dev chain from that account.
   */
  async function browse(cookie: string, walletOf: number, phone = false) {
    const context = await browser.newContext({
      baseURL: base,
      viewport: phone ? PHONE : { width: 1280, height: 860 },
      ...(phone ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
      locale: 'en-US',
      timezoneId: 'UTC',
    });
    contexts.push(context);
    context.setDefaultTimeout(15_000);
    const [name, value] = cookie.split('=') as [string, string];
    await context.addCookies([{ name, value, url: base }]);
    const account = devAccount(walletOf);
    const wallet = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account });
    const sent: { to: Hex; data: Hex; hash: Hex }[] = [];
    const added: AddedChain[] = [];
    await injectStrictWallet(context, account, {
      checkRpc: false,
      switchOnAdd: true,
      onAddChain: (chain) => added.push(chain),
      async send(tx) {
        const hash = await wallet.sendTransaction({ to: tx.to, data: tx.data, value: BigInt(tx.value ?? '0x0') });
        sent.push({ to: tx.to, data: tx.data, hash });
        return hash;
      },
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.push(`console: ${msg.text()}`);
    });
    return { context, page, sent, added, problems };
  }

  const row = (page: Page, address: string) => page.locator(`[data-testid="balance-row"][data-address="${address.toLowerCase()}"]`);

  test('the page shows what the split holds per recipient; the recipient’s Release moves it to released', async () => {
    const merchant = devKeyAccount(3);
    const s = await signIn(t, merchant);
    const deployed = await admin(t, s, 'POST', '/api/split/deploy', {
      recipients: [
        { address: s.wallet, sharesBps: 9950 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    });
    assert.equal(deployed.status, 200, JSON.stringify(deployed.body));
    const split = deployed.body.split.address as Hex;
    const usdc = tc.chain.usdc.address;
    // 12.345678 USDC straight into the split: 99.50% is 12.28394961, rounded down by the contract.
    const payer = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(0) });
    const paid = await payer.writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [split, 12_345_678n] });
    assert.equal((await tc.chain.publicClient.waitForTransactionReceipt({ hash: paid })).status, 'success');

    const b = await browse(s.cookie, 3);
    await b.page.goto('/admin/split');
    const mine = row(b.page, s.wallet);
    await mine.waitFor();
    assert.equal(await mine.getByTestId('balance-releasable').innerText(), '12.283949 USDC');
    assert.equal(await mine.getByTestId('balance-released').innerText(), '0 USDC');
    assert.equal(await row(b.page, PLATFORM).getByTestId('balance-releasable').innerText(), '0.061728 USDC');
    assert.equal(await b.page.getByTestId('split-received').innerText(), '12.345678 USDC');
    assert.equal(await b.page.getByTestId('split-held').innerText(), '12.345678 USDC');
    await screenshot(b.page, 'split-balances');

    // The platform's line is not this wallet's to release: the page says which wallet to connect.
    await row(b.page, PLATFORM).getByRole('button', { name: 'Release' }).click();
    await b.page.getByRole('alert').filter({ hasText: `Switch it to ${PLATFORM}` }).waitFor();
    assert.equal(b.sent.length, 0, 'nothing was sent');

    const before = await tc.chain.publicClient.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [merchant.address] });
    await mine.getByRole('button', { name: 'Release' }).click();
    await b.page.getByRole('status').filter({ hasText: 'Released 12.283949 USDC' }).waitFor({ timeout: 30_000 });
    await mine.getByTestId('balance-released').filter({ hasText: '12.283949 USDC' }).waitFor();
    assert.equal(await mine.getByTestId('balance-releasable').innerText(), '0 USDC');
    assert.equal(await mine.getByRole('button', { name: 'Release' }).count(), 0, 'nothing left to release');
    assert.equal(await row(b.page, PLATFORM).getByTestId('balance-releasable').innerText(), '0.061728 USDC', 'the platform share stays');
    assert.equal(await b.page.getByTestId('split-held').innerText(), '0.061729 USDC');
    await screenshot(b.page, 'split-released');

    // The wallet was asked to add the dev chain (its RPC through the service), then sent one release to the split.
    assert.deepEqual(b.added.map((c) => c.chainId), ['0x7a69']);
    assert.equal(b.sent.length, 1);
    assert.equal(b.sent[0]!.to.toLowerCase(), split);
    const released = await tc.chain.publicClient.readContract({ address: split, abi: paymentSplitterAbi, functionName: 'released', args: [usdc, merchant.address] });
    assert.equal(released, 12_283_949n);
    const after = await tc.chain.publicClient.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [merchant.address] });
    assert.equal(after - before, 12_283_949n, 'the recipient received its share');
    assert.deepEqual(b.problems, []);

    // On a phone the table fits without sideways scrolling.
    const phone = await browse(s.cookie, 3, true);
    await phone.page.goto('/admin/split');
    await row(phone.page, s.wallet).waitFor();
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    await screenshot(phone.page, 'split-balances-phone');
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow}px on a phone`);
  });
});
