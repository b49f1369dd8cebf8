/**
 * The Split page's balances in a real browser on a real dev chain: what the split holds for each
 * recipient and what it released; the merchant's browser wallet paying out any recipient, or all
 * (release is open to anyone, so recipients never sign in); the automatic payouts' settings; the
 * settlement per recipient with its daily volume chart and CSV. The
 * wallet is an injected EIP-1193 wallet that starts on another chain, adds the dev chain when
 * asked, and sends real transactions from a dev account through a function exposed from Node.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Browser, type Page } from 'playwright-core';
import { createWalletClient, erc20Abi, http, toHex, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import type { TestApp } from '../helpers/app.ts';
import { admin, signIn } from '../helpers/session.ts';
import { CHAIN_WAIT_MS, PLATFORM, type TestChain } from '../chain/helpers.ts';
import { waitFor } from '../helpers/wait.ts';
import { browseWithDevWallet, screenshot, skipReason, useChainBrowser } from './harness.ts';

if (skipReason) console.log(skipReason);


describe('split page: balances, payouts and automatic payouts', { skip: skipReason, timeout: 240_000 }, () => {
  let tc: TestChain;
  let t: TestApp;
  let base: string;
  let browser: Browser;

  useChainBrowser({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM }, (s) => ({ tc, t, base, browser } = s));

  /** A dev account as a local account, so it can both sign in (typed data) and pay gas. */
  const devKeyAccount = (i: number) => privateKeyToAccount(toHex(devAccount(i).getHdKey().privateKey!));

  /** The signed-in merchant's browser with dev account `walletOf`'s wallet (browseWithDevWallet), closed after the suite. */
  async function browse(cookie: string, walletOf: number, phone = false) {
    return browseWithDevWallet({ browser, base, tc, cookie, walletOf, phone });
  }

  const row = (page: Page, address: string) => page.locator(`[data-testid="balance-row"][data-address="${address.toLowerCase()}"]`);

  test('the page shows what the split holds per recipient; the merchant’s wallet pays out any recipient, or all; automatic payouts are set; the settlement per recipient', async () => {
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
    const payer = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(0) });
    const payIn = async (amount: bigint) => {
      const paid = await payer.writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [split, amount] });
      assert.equal((await tc.chain.publicClient.waitForTransactionReceipt({ hash: paid })).status, 'success');
    };
    const balanceOf = (address: Hex) => tc.chain.publicClient.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] });
    const releasedTo = (address: Hex) => tc.chain.publicClient.readContract({ address: split, abi: paymentSplitterAbi, functionName: 'released', args: [usdc, address] });
    // 12.345678 USDC straight into the split: 99.50% is 12.28394961, rounded down by the contract.
    await payIn(12_345_678n);

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

    // The platform never signs in here: the merchant's wallet pays its line out, and the money goes to the platform.
    const platformBefore = await balanceOf(PLATFORM);
    await row(b.page, PLATFORM).getByRole('button', { name: 'Pay out' }).click();
    await b.page.getByRole('status').filter({ hasText: `Paid out 0.061728 USDC to ${PLATFORM}` }).waitFor({ timeout: 30_000 });
    await row(b.page, PLATFORM).getByTestId('balance-released').filter({ hasText: '0.061728 USDC' }).waitFor();
    assert.equal(await balanceOf(PLATFORM) - platformBefore, 61_728n, 'the platform received its share');
    assert.equal(await mine.getByTestId('balance-releasable').innerText(), '12.283949 USDC', 'the merchant’s line stays');
    assert.equal(await b.page.getByRole('button', { name: /Pay out all/ }).count(), 0, 'one line owed: no Pay out all');

    // More money: both lines are owed again, and Pay out all sends one release per line.
    await payIn(1_000_000n);
    await b.page.reload();
    await mine.getByTestId('balance-releasable').filter({ hasText: '13.278949 USDC' }).waitFor();
    assert.equal(await row(b.page, PLATFORM).getByTestId('balance-releasable').innerText(), '0.005 USDC');
    const merchantBefore = await balanceOf(merchant.address);
    await b.page.getByRole('button', { name: 'Pay out all (2)' }).click();
    await b.page.getByRole('status').filter({ hasText: `Paid out 13.278949 USDC to ${s.wallet}; 0.005 USDC to ${PLATFORM}` }).waitFor({ timeout: 30_000 });
    await mine.getByTestId('balance-released').filter({ hasText: '13.278949 USDC' }).waitFor();
    assert.equal(await mine.getByRole('button', { name: 'Pay out' }).count(), 0, 'nothing left to pay out');
    assert.equal(await b.page.getByTestId('split-held').innerText(), '0.000001 USDC', 'only the rounding stays in the split');
    assert.equal(await releasedTo(merchant.address), 13_278_949n);
    assert.equal(await releasedTo(PLATFORM), 66_728n);
    assert.equal((await balanceOf(merchant.address)) - merchantBefore, 13_278_949n, 'gas is ETH: the USDC arrives whole');
    await screenshot(b.page, 'split-released');

    // The wallet was asked to add the dev chain (its RPC through the service; once per page load, as the
    // injected wallet starts on mainnet again after the reload), then sent three releases, all to the split.
    assert.deepEqual(b.added.map((c) => c.chainId), ['0x7a69', '0x7a69']);
    assert.equal(b.sent.length, 3);
    assert.ok(b.sent.every((x) => x.to.toLowerCase() === split));

    // Automatic payouts: the page checks the values, then turns them on; the server keeps exactly those.
    const auto = b.page.getByTestId('auto-payouts');
    await auto.getByText('Off:').waitFor();
    await auto.getByLabel('Pay out from (USD)').fill('0');
    await auto.getByRole('button', { name: 'Turn on' }).click();
    await auto.getByText('An amount above 0, at most two decimals').waitFor();
    await auto.getByLabel('Pay out from (USD)').fill('25.50');
    await auto.getByLabel('At most every (hours)').fill('12');
    await auto.getByRole('button', { name: 'Turn on' }).click();
    await auto.getByText('On: every 12 h at most, each recipient holding 25.5 USDC or more is paid out').waitFor();
    const stored = await admin(t, s, 'GET', '/api/admin/split/payouts');
    assert.deepEqual(stored.body, { payouts: { payoutThresholdUsd: 25.5, payoutIntervalHours: 12, lastRunAt: null }, automatic: true });
    await auto.getByRole('button', { name: 'Turn off' }).click();
    await auto.getByText('Off:').waitFor();
    assert.equal((await admin(t, s, 'GET', '/api/admin/split/payouts')).body.payouts, null);

    // The settlement, once the chain worker has indexed both transfers and the three releases: per
    // recipient what the contract says, the day's bar, one recipient's bar, and the same lines as CSV.
    const report = await waitFor(async () => {
      const r = await admin(t, s, 'GET', '/api/split/settlements');
      return r.body.totals?.gross === '13345678' && r.body.totals?.released === '13345677' ? r.body : undefined;
    }, CHAIN_WAIT_MS, 'the transfers and releases to be indexed');
    await b.page.reload();
    const settlement = b.page.getByTestId('settlement');
    const line = (address: string) => settlement.locator(`[data-testid="settlement-row"][data-address="${address.toLowerCase()}"]`);
    await line(s.wallet).waitFor();
    assert.equal(await settlement.getByTestId('settlement-gross').innerText(), '13.345678 USDC');
    assert.equal(await settlement.getByTestId('settlement-released').innerText(), '13.345677 USDC');
    for (const [address, units] of [[merchant.address, 13_278_949n], [PLATFORM, 66_728n]] as const) {
      assert.equal(await releasedTo(address), units);
      const shown = `${Number(units) / 1e6} USDC`;
      assert.equal(await line(address).getByTestId('settlement-accrued').innerText(), shown, `${address}: accrued = the contract's released + releasable`);
      assert.equal(await line(address).getByTestId('settlement-paid-to-date').innerText(), shown);
      assert.equal(await line(address).getByTestId('settlement-share').innerText(), shown);
    }
    const today = new Date(report.lines[0].timestamp).toISOString().slice(0, 10);
    const bar = settlement.locator(`[data-testid="volume-bar"][data-day="${today}"]`);
    assert.equal(await bar.getAttribute('data-units'), '13345678');
    await settlement.getByLabel('Chart').selectOption({ label: s.wallet });
    await settlement.locator(`[data-testid="volume-bar"][data-day="${today}"][data-units="13278949"]`).waitFor();
    await screenshot(b.page, 'split-settlement');
    const csv = await b.page.request.get((await settlement.getByTestId('settlement-csv').getAttribute('href'))!);
    assert.equal(csv.status(), 200);
    assert.match(csv.headers()['content-type'] ?? '', /^text\/csv/);
    const rows = (await csv.text()).trimEnd().split('\r\n');
    assert.equal(rows.length, 1 + report.lines.length);
    assert.equal(rows[0], `timestamp,block_number,transaction_hash,log_index,receipt_id,version,split,gross,share_${s.wallet},share_${PLATFORM},platform_fee,unallocated`);
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
