/**
 * The Split page's versions in a real browser on a real dev chain: the merchant makes a new
 * version with the recipients editor, the service deploys its contract, the page shows both
 * versions with the new one current, and sending the current recipients again changes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { ensureWebBuild } from '../../scripts/ensure-web-build.ts';
import type { TestApp } from '../helpers/app.ts';
import { admin, signIn } from '../helpers/session.ts';
import { PLATFORM, startChainApp, startTestChain, type TestChain } from '../chain/helpers.ts';
import { CHROMIUM, screenshot, skipReason } from './harness.ts';

if (skipReason) console.log(skipReason);

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const PARTNER = '0x90f79bf6eb2c4f870365e785982e1f101e93b906';

describe('split page: versions', { skip: skipReason, timeout: 240_000 }, () => {
  let tc: TestChain;
  let t: TestApp;
  let base: string;
  let browser: Browser;

  before(async () => {
    await ensureWebBuild((line) => console.log(line));
    tc = await startTestChain();
    t = await startChainApp(tc.chain, { CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('the app is not listening on a TCP port');
    base = `http://127.0.0.1:${address.port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 30_000 });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await tc?.close();
  });

  test('a new version from the recipients editor becomes current; the same recipients again change nothing', async () => {
    const s = await signIn(t);
    const first = await admin(t, s, 'POST', '/api/split/deploy', { recipients: [{ address: s.wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
    assert.equal(first.status, 200, JSON.stringify(first.body));

    const context = await browser.newContext({ baseURL: base, viewport: { width: 1280, height: 860 }, locale: 'en-US', timezoneId: 'UTC' });
    context.setDefaultTimeout(20_000);
    const [name, value] = s.cookie.split('=') as [string, string];
    await context.addCookies([{ name, value, url: base }]);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.push(`console: ${msg.text()}`);
    });
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
});
