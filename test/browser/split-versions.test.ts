/**
 * The Split page's versions in a real browser on a real dev chain: the merchant makes a new
 * version with the recipients editor, the service deploys its contract, the page shows both
 * versions with the new one current, and sending the current recipients again changes nothing.
 * Money paid under an earlier version stays in its contract, and the Balances card pays it out
 * from there with the merchant's wallet.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Browser } from 'playwright-core';
import { erc20Abi, type Hex } from 'viem';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import type { TestApp } from '../helpers/app.ts';
import { admin, newAccount, signIn } from '../helpers/session.ts';
import { until } from '../helpers/wait.ts';
import { CHAIN_WAIT_MS, devWallet, PLATFORM, postReceipt, type TestChain } from '../chain/helpers.ts';
import { browseWithDevWallet, screenshot, skipReason, useChainBrowser } from './harness.ts';

if (skipReason) console.log(skipReason);

const PARTNER = '0x90f79bf6eb2c4f870365e785982e1f101e93b906';

describe('split page: versions', { skip: skipReason, timeout: 300_000 }, () => {
  let tc: TestChain;
  let t: TestApp;
  let base: string;
  let browser: Browser;

  // The chain worker and sweeper move a receipt's payment into its version's split.
  useChainBrowser({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM }, (s) => ({ tc, t, base, browser } = s));

  test('a new version from the recipients editor becomes current; the same recipients again change nothing', async () => {
    const s = await signIn(t);
    const first = await admin(t, s, 'POST', '/api/split/deploy', { recipients: [{ address: s.wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
    assert.equal(first.status, 200, JSON.stringify(first.body));

    const { context, page, problems } = await browseWithDevWallet({ browser, base, tc, cookie: s.cookie, walletOf: 4 });
    context.setDefaultTimeout(20_000);
    await page.goto('/admin/split');
    const versions = page.getByTestId('split-versions');
    await versions.getByTestId('version-number').first().waitFor();
    assert.equal(await versions.getByTestId('version-number').count(), 1);

    await versions.getByRole('button', { name: 'New version' }).click();
    const editor = page.getByTestId('version-editor');
    await editor.locator('input[name="percent-0"]').fill('69.50');
    await editor.getByRole('button', { name: 'Add recipient' }).click();
    await editor.locator('input[name="address-1"]').fill(PARTNER);
    await editor.locator('input[name="percent-1"]').fill('30.00');
    await editor.getByRole('button', { name: 'Make new version' }).click();

    await page.locator('[data-testid="split-versions"] [data-testid="version-number"]').nth(1).waitFor();
    const numbers = await page.getByTestId('split-versions').getByTestId('version-number').allInnerTexts();
    assert.match(numbers[0]!, /^2\s*current/i);
    assert.match(numbers[1]!, /^1$/);
    const listed = await admin(t, s, 'GET', '/api/admin/split/versions');
    assert.deepEqual(listed.body.versions[0].recipients, [{ address: s.wallet, sharesBps: 6950 }, { address: PARTNER, sharesBps: 3000 }, { address: PLATFORM, sharesBps: 50 }]);
    const v2 = listed.body.versions[0].address as string;
    assert.notEqual(v2, first.body.split.address);
    assert.ok(((await tc.chain.publicClient.getCode({ address: v2 as `0x${string}` })) ?? '0x').length > 2, 'the service deployed version 2');
    await page.getByTestId('stored-split').getByText(v2).waitFor();
    await screenshot(page, 'split-versions');

    // The same recipients again: the page says nothing changed, and there are still two versions.
    await page.getByTestId('split-versions').getByRole('button', { name: 'New version' }).click();
    const again = page.getByTestId('version-editor');
    await again.locator('input[name="percent-0"]').fill('69.50');
    await again.getByRole('button', { name: 'Add recipient' }).click();
    await again.locator('input[name="address-1"]').fill(PARTNER);
    await again.locator('input[name="percent-1"]').fill('30.00');
    await again.getByRole('button', { name: 'Make new version' }).click();
    await page.getByTestId('version-idempotent').waitFor();
    assert.equal((await admin(t, s, 'GET', '/api/admin/split/versions')).body.versions.length, 2);
    assert.deepEqual(problems, []);
    await context.close();
  });

  test("money paid under version 1 stays in its contract after version 2; the Balances card pays it out from there", async () => {
    const s = await signIn(t);
    const partner = newAccount().address.toLowerCase() as Hex;
    const deployed = await admin(t, s, 'POST', '/api/split/deploy', { recipients: [{ address: partner, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
    assert.equal(deployed.status, 200, JSON.stringify(deployed.body));
    const v1 = deployed.body.split.address as Hex;
    const usdc = tc.chain.usdc.address;
    const balanceOf = (address: Hex) => tc.chain.publicClient.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] });

    // A sale under version 1: the buyer pays the receipt's address and the sweeper moves it into version 1's split.
    const shop = { s, wallet: s.wallet, key: await t.key(s.wallet), split: v1 };
    const search = await postReceipt(t, shop, 'v1-sale', 3.21);
    const pay = await t.call(null, 'GET', `/api/pay/v1-sale${search}`);
    assert.equal(pay.body.payment.splitAddress, v1);
    const paid = await devWallet(tc, 0).writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [pay.body.payment.payTo, 3_210_000n], gas: 100_000n });
    assert.equal((await tc.chain.publicClient.waitForTransactionReceipt({ hash: paid })).status, 'success');
    await until(async () => (await balanceOf(v1)) === 3_210_000n, CHAIN_WAIT_MS, 'the payment to be swept into version 1');

    // Version 2 pays the merchant instead; version 1 still holds the partner's share of the sale.
    const made = await admin(t, s, 'POST', '/api/admin/split/versions', { recipients: [{ address: s.wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const v2 = made.body.version.address as Hex;
    const held = await tc.chain.publicClient.readContract({ address: v1, abi: paymentSplitterAbi, functionName: 'releasable', args: [usdc, partner] });
    assert.equal(held, 3_193_950n, "99.50% of 3.21 USDC");

    // The card: the current version first, then version 1 with its contract and the partner's held money.
    const b = await browseWithDevWallet({ browser, base, tc, cookie: s.cookie, walletOf: 4 });
    await b.page.goto('/admin/split');
    const section = (version: number) => b.page.locator(`[data-testid="balance-version"][data-version="${version}"]`);
    const partnerRow = section(1).locator(`[data-testid="balance-row"][data-address="${partner}"]`);
    await partnerRow.waitFor();
    assert.deepEqual(await b.page.getByTestId('balance-version').evaluateAll((els) => els.map((e) => e.getAttribute('data-version'))), ['2', '1']);
    assert.match(await section(2).locator('h3').innerText(), /^Version 2\s*current$/i);
    assert.equal(await section(2).getByTestId('split-contract').innerText(), v2);
    assert.equal(await section(2).getByTestId('split-held').innerText(), '0 USDC');
    assert.equal(await section(2).getByRole('button', { name: /Pay out/ }).count(), 0, 'the current version holds nothing');
    assert.equal(await section(1).getByTestId('split-contract').innerText(), v1);
    assert.equal(await section(1).getByTestId('split-held').innerText(), '3.21 USDC');
    assert.equal(await partnerRow.getByTestId('balance-releasable').innerText(), '3.19395 USDC');
    assert.equal(await partnerRow.getByTestId('balance-released').innerText(), '0 USDC');
    await screenshot(b.page, 'split-balances-versions');

    // Version 1's Pay out: the merchant's wallet sends release to version 1's contract, and the partner gets exactly what it held.
    const before = await balanceOf(partner);
    await partnerRow.getByRole('button', { name: 'Pay out' }).click();
    await section(1).getByRole('status').filter({ hasText: `Paid out 3.19395 USDC to ${partner}` }).waitFor({ timeout: 30_000 });
    await partnerRow.getByTestId('balance-released').filter({ hasText: '3.19395 USDC' }).waitFor();
    assert.equal(await partnerRow.getByTestId('balance-releasable').innerText(), '0 USDC');
    assert.equal(await partnerRow.getByRole('button', { name: 'Pay out' }).count(), 0, 'nothing left to pay the partner');
    assert.equal((await balanceOf(partner)) - before, held, 'the partner received exactly what version 1 held for it');
    assert.deepEqual(b.sent.map((x) => x.to.toLowerCase()), [v1], 'one release, sent to version 1\'s contract');

    // A third version: version 2, which never received anything, is only named; version 1 stays listed with its payout.
    const third = await admin(t, s, 'POST', '/api/admin/split/versions', { recipients: [{ address: s.wallet, sharesBps: 5000 }, { address: partner, sharesBps: 4950 }, { address: PLATFORM, sharesBps: 50 }] });
    assert.equal(third.status, 200, JSON.stringify(third.body));
    await b.page.reload();
    await b.page.getByTestId('empty-versions').waitFor();
    assert.deepEqual(await b.page.getByTestId('balance-version').evaluateAll((els) => els.map((e) => e.getAttribute('data-version'))), ['3', '1']);
    assert.equal(await b.page.getByTestId('empty-versions').innerText(), 'Version 2: nothing was ever paid into its contract, so there is nothing to pay out.');
    assert.equal(await section(1).getByTestId('split-released').innerText(), '3.19395 USDC');
    assert.deepEqual(b.problems, []);
    await b.context.close();
  });
});
