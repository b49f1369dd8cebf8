/**
 * The admin web app in a real browser (Debian's chromium, headless): sign-in with an injected
 * wallet, and each page doing its job against the real server and database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Browser } from 'playwright-core';
import { and, eq } from 'drizzle-orm';
import { createWalletClient, erc20Abi, http, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { chainStatus, receipts, rejectedWrites } from '../../src/db/schema.ts';
import { SWEEP_STATUS } from '../../src/payments/sweeper.ts';
import type { TestApp } from '../helpers/app.ts';
import { admin, newAccount, signIn } from '../helpers/session.ts';
import { CHAIN_WAIT_MS, type TestChain } from '../chain/helpers.ts';
import { eventually, until, waitFor } from '../helpers/wait.ts';
import {
  PLATFORM,
  RENDER_MS,
  screenshot,
  setUpSplit,
  signInThroughPage,
  skipReason,
  startHarness,
  useChainBrowser,
  type Harness,
  type Merchant,
} from './harness.ts';

if (skipReason) console.log(skipReason);

describe('admin web app', { skip: skipReason, timeout: 360_000 }, () => {
  let h: Harness;
  /** The user directory is a superadmin's (or a granted key's): this wallet is one. */
  const superAccount = newAccount();
  before(async () => {
    h = await startHarness({ SUPERADMIN_WALLETS: superAccount.address });
  });
  after(async () => {
    await h?.close();
  });

  /** A merchant signed in through the page; fails the test on any script error or CSP violation. */
  async function merchant(opts: { phone?: boolean } = {}): Promise<Merchant> {
    const m = await h.open(opts);
    await signInThroughPage(m);
    return m;
  }
  function noProblems(m: Merchant) {
    assert.deepEqual(m.problems, [], 'no script errors or CSP violations');
  }

  test('without a wallet, sign-in says so clearly', async () => {
    const m = await h.open({ wallet: false });
    await m.page.goto('/admin/');
    const note = m.page.getByTestId('no-wallet');
    await note.waitFor();
    assert.match(await note.innerText(), /No browser wallet found/);
    await m.page.getByRole('button', { name: 'Sign in with wallet' }).click();
    assert.equal(await note.isVisible(), true);
    await screenshot(m.page, 'signin-no-wallet');
    noProblems(m);
  });

  test('sign-in with the wallet, the session survives a reload, sign-out ends it', async () => {
    const m = await h.open();
    await m.page.goto('/admin/');
    await screenshot(m.page, 'signin');
    await m.page.getByRole('button', { name: 'Sign in with wallet' }).click();
    const badge = m.page.getByTestId('signed-in-wallet');
    await badge.waitFor();
    assert.equal(await badge.getAttribute('title'), m.wallet);
    const cookie = (await m.context.cookies()).find((c) => c.name === 'cb_auth_token');
    assert.ok(cookie?.httpOnly, 'the session cookie is HttpOnly');
    await m.page.reload();
    await badge.waitFor();
    // Reloaded: the CSRF token came back from /api/auth/me, so a write still works.
    await m.page.getByRole('link', { name: 'Shop' }).click();
    await m.page.getByLabel('Processing fee (%)').fill('1');
    await m.page.getByRole('button', { name: 'Save settings' }).click();
    await m.page.getByText('Settings saved.').waitFor();
    await m.page.getByRole('link', { name: 'Overview' }).click();
    await m.page.getByTestId('today-stats').waitFor();
    await screenshot(m.page, 'overview-empty');
    await m.page.getByRole('button', { name: 'Sign out' }).click();
    await m.page.getByText('You are signed out.').waitFor();
    assert.equal((await m.api('GET', '/api/auth/me')).status, 401, 'the server ended the session');
    noProblems(m);
  });

  test('shop settings: client-side checks, then saved exactly (7.25% is 0.0725)', async () => {
    const m = await merchant();
    await m.page.goto('/admin/shop');
    await m.page.getByLabel('Shop name').fill('Corner Café');
    await m.page.getByLabel('Processing fee (%)').fill('2.555');
    await m.page.getByRole('button', { name: 'Add jurisdiction' }).click();
    const row = m.page.getByTestId('jurisdiction-row').last();
    await row.getByLabel('Code').fill('CA');
    await row.getByLabel('Rate (%)').fill('7.25');
    await row.getByLabel('Components').fill('state, county');
    await m.page.getByLabel('Allowed embed origins').fill('https://shop.example\nhttps://shop.example/path');
    await m.page.getByRole('button', { name: 'Save settings' }).click();
    await m.page.getByText('A percentage from 0 to 100 with at most two decimals').waitFor();
    await m.page.getByText('is not an origin such as').waitFor();
    await screenshot(m.page, 'shop-invalid');
    assert.equal((await m.api('GET', '/api/shop/config')).body.config.name, null, 'nothing was sent');

    await m.page.getByLabel('Processing fee (%)').fill('2.5');
    await m.page.getByLabel('Allowed embed origins').fill('https://shop.example');
    await m.page.getByRole('button', { name: 'Save settings' }).click();
    await m.page.getByText('Settings saved.').waitFor();
    await screenshot(m.page, 'shop');
    const saved = (await m.api('GET', '/api/shop/config')).body.config;
    assert.equal(saved.name, 'Corner Café');
    assert.equal(saved.processingFeePct, 2.5);
    assert.deepEqual(saved.taxJurisdictions, [{ code: 'CA', rate: 0.0725, components: ['state', 'county'] }]);
    assert.deepEqual(saved.allowedEmbedOrigins, ['https://shop.example']);
    await m.page.reload();
    assert.equal(await m.page.getByTestId('jurisdiction-row').getByLabel('Rate (%)').inputValue(), '7.25');
    noProblems(m);
  });

  test('split: the editor checks the sum, keeps the platform line, stores once (idempotent)', async () => {
    const m = await merchant();
    const partner = '0x1111111111111111111111111111111111111111';
    await m.page.goto('/admin/split');
    const platformRow = m.page.getByTestId('platform-row');
    await platformRow.waitFor();
    assert.equal(await platformRow.getByLabel('Platform fee recipient').isDisabled(), true);
    assert.equal(await platformRow.getByLabel('Share (%)').inputValue(), '0.50');
    const first = m.page.getByTestId('recipient-row').first();
    assert.equal(await first.getByLabel('Recipient 1').inputValue(), m.wallet);
    assert.equal(await first.getByLabel('Share (%)').inputValue(), '99.50');
    await m.page.getByRole('button', { name: 'Add recipient' }).click();
    const second = m.page.getByTestId('recipient-row').nth(1);
    await second.getByLabel('Recipient 2').fill(partner);
    await second.getByLabel('Share (%)').fill('20.10');
    const sum = m.page.getByTestId('split-sum');
    await eventually(async () => assert.match(await sum.innerText(), /120\.10%/), RENDER_MS, 'the sum to show 120.10%');
    await m.page.getByRole('button', { name: 'Save split' }).click();
    await m.page.getByRole('alert').filter({ hasText: 'must add up to exactly 100.00%' }).waitFor();
    await screenshot(m.page, 'split-editor');
    assert.deepEqual((await m.api('GET', '/api/split/deploy')).body.split.recipients, [], 'nothing was sent');

    await first.getByLabel('Share (%)').fill('79.40');
    await eventually(async () => assert.match(await sum.innerText(), /100\.00% ✓/), RENDER_MS, 'the sum to show 100.00% ✓');
    await m.page.getByRole('button', { name: 'Save split' }).click();
    await m.page.getByTestId('stored-split').waitFor();
    const expected = [
      { address: m.wallet, sharesBps: 7940 },
      { address: partner, sharesBps: 2010 },
      { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 },
    ];
    assert.deepEqual((await m.api('GET', '/api/split/deploy')).body.split.recipients, expected);
    assert.deepEqual(await m.page.getByTestId('stored-share').allInnerTexts(), ['79.40%', '20.10%', '0.50%']);
    await m.page.getByRole('button', { name: 'Send again to check' }).click();
    await m.page.getByTestId('split-idempotent').waitFor();
    await screenshot(m.page, 'split');
    assert.deepEqual((await m.api('GET', '/api/split/deploy')).body.split.recipients, expected, 'unchanged');
    noProblems(m);
  });

  test('inventory: create, edit and restock', async () => {
    const m = await merchant();
    await m.page.goto('/admin/inventory');
    const form = m.page.getByTestId('item-form');
    await form.getByLabel('SKU').fill('COFFEE-12');
    await form.getByLabel('Name').fill('Coffee beans');
    await form.getByLabel('Price (USD)').fill('12.345');
    await form.getByLabel('In stock').fill('10');
    await form.getByRole('button', { name: 'Add product' }).click();
    await form.getByText('A price such as 4.50').waitFor();
    await form.getByLabel('Price (USD)').fill('12.30');
    await form.getByRole('button', { name: 'Add product' }).click();
    await m.page.getByText('Added Coffee beans.').waitFor();
    const row = m.page.locator('[data-testid="inventory-row"][data-sku="COFFEE-12"]');
    assert.match(await row.innerText(), /\$12\.30/);

    await row.getByRole('button', { name: 'Edit' }).click();
    await eventually(async () => assert.equal(await form.getByLabel('SKU').inputValue(), 'COFFEE-12'), RENDER_MS, 'the form to hold the item');
    await form.getByLabel('Name').fill('Coffee beans, 12 oz');
    await form.getByLabel('Price (USD)').fill('13');
    await form.getByLabel('Taxable').uncheck();
    await form.getByRole('button', { name: 'Save changes' }).click();
    await m.page.getByText('Saved Coffee beans, 12 oz.').waitFor();

    await row.getByLabel('Stock of COFFEE-12').fill('25');
    await row.getByRole('button', { name: 'Set' }).click();
    await m.page.getByText('Stock of Coffee beans, 12 oz is now 25.').waitFor();
    await screenshot(m.page, 'inventory');
    const items = (await m.api('GET', '/api/inventory')).body.items;
    assert.equal(items.length, 1);
    assert.equal(items[0].name, 'Coffee beans, 12 oz');
    assert.equal(items[0].priceUsd, 13);
    assert.equal(items[0].stockQty, 25);
    assert.equal(items[0].taxable, false);
    noProblems(m);
  });

  test('an order paid later: a pending receipt with its payment link', async () => {
    const m = await merchant();
    await setUpSplit(m);
    await m.api('POST', '/api/shop/config', { processingFeePct: 0, taxJurisdictions: [{ code: 'NY', rate: 0.08875 }] });
    await m.api('POST', '/api/inventory', { sku: 'MUG', name: 'Mug', priceUsd: 9.5, stockQty: 5 });
    await m.api('POST', '/api/inventory', { sku: 'TEE', name: 'T-shirt', priceUsd: 20, stockQty: -1 });
    await m.page.goto('/admin/receipts');
    await m.page.getByRole('link', { name: 'New order' }).click();
    await m.page.getByRole('button', { name: 'Create order' }).click();
    await m.page.getByRole('alert').filter({ hasText: 'Choose at least one product.' }).waitFor();
    await m.page.getByLabel('Quantity of MUG').fill('2');
    await m.page.getByLabel('Tax jurisdiction').selectOption('NY');
    await screenshot(m.page, 'order-new');
    await m.page.getByRole('button', { name: 'Create order' }).click();
    const card = m.page.getByTestId('created-receipt');
    await card.waitFor();
    assert.match(await card.innerText(), /Waiting for payment/);
    assert.equal(await card.locator('[data-status="pending"]').first().getAttribute('title'), 'pending', 'the raw status in the title');
    const url = await card.getByTestId('payment-url').innerText();
    assert.match(url, /^http:\/\/pay\.test\/pay\/\S+/);
    // 2 × 9.50 = 19.00, tax 8.875% = 1.69 (half up), total 20.69.
    assert.equal(await card.getByTestId('created-total').innerText(), '$20.69');
    await card.getByTestId('qr-code').waitFor();
    // Followed live: nothing paid yet, all of it due, and the time left.
    await card.getByTestId('live-state').filter({ hasText: 'Waiting for the buyer to pay' }).waitFor();
    assert.equal(await card.getByTestId('live-paid').innerText(), '0 USDC');
    assert.equal(await card.getByTestId('live-due').innerText(), '20.69 USDC');
    assert.match(await card.getByTestId('countdown').innerText(), /^Pay within (1:00:00|59:[0-5]\d)$/);
    await screenshot(m.page, 'order-created');
    const list = (await m.api('GET', '/api/receipts?limit=200')).body.receipts;
    assert.equal(list.length, 1);
    assert.equal(list[0].status, 'pending');
    assert.equal(list[0].totalUsd, 20.69);
    assert.equal((await m.api('GET', '/api/inventory')).body.items.find((i: { sku: string }) => i.sku === 'MUG').stockQty, 3);
    noProblems(m);
  });

  test('terminal: the server error before a split, then a keypad sale with tax and a QR code', async () => {
    const m = await merchant();
    await m.api('POST', '/api/shop/config', { processingFeePct: 0, taxJurisdictions: [{ code: 'TX', rate: 0.0825 }] });
    await m.page.goto('/admin/terminal');
    for (const k of ['2', '0', '0', '0']) await m.page.getByRole('button', { name: k, exact: true }).click();
    await eventually(async () => assert.equal(await m.page.getByTestId('terminal-amount').innerText(), '$20.00'), RENDER_MS, 'the display to read $20.00');
    await m.page.getByRole('button', { name: 'Charge $20.00' }).click();
    await m.page.getByRole('alert').filter({ hasText: 'Configure a split before creating orders or terminal receipts' }).waitFor();

    await setUpSplit(m);
    await m.page.getByLabel('Label').fill('Haircut');
    await m.page.getByLabel('Tax').selectOption('TX');
    await screenshot(m.page, 'terminal');
    await m.page.getByRole('button', { name: 'Charge $20.00' }).click();
    const card = m.page.getByTestId('created-receipt');
    await card.waitFor();
    assert.equal(await card.getByTestId('created-total').innerText(), '$21.65');
    assert.match(await card.innerText(), /Created/);
    assert.match(await card.innerText(), /Tax \(TX\)/);
    const qr = card.getByTestId('qr-code');
    assert.equal(await qr.isVisible(), true);
    const box = await qr.boundingBox();
    assert.ok(box !== null && box.width >= 150, 'the QR code is drawn at a scannable size');
    assert.ok(((await qr.locator('path').getAttribute('d')) ?? '').length > 1000, 'the QR code has modules');
    assert.match(await card.getByTestId('payment-url').innerText(), /^http:\/\/pay\.test\/pay\/pos_/);
    await card.getByTestId('live-state').filter({ hasText: 'Waiting for the buyer to pay' }).waitFor();
    assert.equal(await card.getByTestId('live-due').innerText(), '21.65 USDC');
    await card.getByTestId('countdown').waitFor();
    await screenshot(m.page, 'terminal-receipt');
    noProblems(m);
  });

  test('receipts: filter, detail with status history, partial then full refund', async () => {
    const m = await merchant();
    await setUpSplit(m);
    const sale = await m.api('POST', '/api/receipts/terminal', { amountUsd: 12, label: 'Lamp' });
    await m.api('POST', '/api/receipts/terminal', { amountUsd: 3, label: 'Candle' });
    const id: string = sale.body.receipt.receiptId;
    const buyer = '0x2222222222222222222222222222222222222222';

    await m.page.goto('/admin/receipts');
    await m.page.getByTestId('receipt-row').nth(1).waitFor();
    await m.page.getByLabel('Search').fill('lamp');
    await eventually(async () => assert.equal(await m.page.getByTestId('receipt-row').count(), 1), RENDER_MS, 'one receipt to match "lamp"');
    await m.page.getByLabel('Status').selectOption('refunded');
    await m.page.getByText('No receipt matches.').waitFor();
    await m.page.getByLabel('Status').selectOption('generated');
    await screenshot(m.page, 'receipts');
    await m.page.getByRole('link', { name: id }).click();

    const history = m.page.getByTestId('status-history');
    await history.waitFor();
    assert.match(await history.innerText(), /Created/);
    assert.match(await history.innerText(), /terminal sale/);
    const form = m.page.getByTestId('refund-form');
    assert.equal(await form.getByLabel('Amount (USD)').inputValue(), '12.00');
    await form.getByLabel('Buyer wallet').fill('0x12');
    await form.getByLabel('Amount (USD)').fill('12.01');
    await form.getByRole('button', { name: 'Record refund' }).click();
    await form.getByText("The buyer's wallet: 0x and 40 hex digits").waitFor();
    await form.getByText('At most $12.00 remains to refund').waitFor();

    await form.getByLabel('Buyer wallet').fill(buyer);
    await form.getByLabel('Amount (USD)').fill('5');
    await form.getByRole('button', { name: 'Record refund' }).click();
    await m.page.getByTestId('refund-list').waitFor();
    await history.getByText('Partly refunded').waitFor();
    assert.match(await m.page.getByTestId('refund-list').innerText(), /\$5\.00/);
    await m.page.getByText('Refunded $5.00; $5.00 refunded in all, $7.00 remains.').waitFor();
    await eventually(async () => assert.equal(await form.getByLabel('Amount (USD)').inputValue(), '7.00'), RENDER_MS, 'the form to offer what remains');
    assert.equal(await form.getByLabel('Buyer wallet').inputValue(), buyer, 'and the same buyer');
    await form.getByRole('button', { name: 'Record refund' }).click();
    await m.page.getByText('Fully refunded.', { exact: true }).waitFor();
    await m.page.getByText('Refunded $7.00; the receipt is fully refunded.').waitFor();
    await screenshot(m.page, 'receipt-detail');
    const detail = (await m.api('GET', `/api/receipts/${id}`)).body;
    assert.equal(detail.status, 'refunded');
    assert.deepEqual(
      detail.statusHistory.map((s: { status: string }) => s.status),
      ['generated', 'refund_partial', 'refunded'],
    );
    noProblems(m);
  });

  test('receipts and split pages: Export CSV downloads every receipt (the status filter applied) and the split transactions, with the session', async () => {
    const m = await merchant();
    await setUpSplit(m);
    const sales = [];
    for (const [amountUsd, label] of [[4, 'Pen'], [6, 'Ink']] as const) sales.push((await m.api('POST', '/api/receipts/terminal', { amountUsd, label })).body.receipt.receiptId as string);
    await m.page.goto('/admin/receipts');
    await m.page.getByTestId('receipt-row').nth(1).waitFor();
    await m.page.getByLabel('Status').selectOption('generated');
    const link = m.page.getByRole('link', { name: 'Export CSV' });
    assert.match((await link.getAttribute('href')) ?? '', /\/api\/receipts\?format=csv&status=generated$/);
    assert.equal(await link.getAttribute('download'), '');
    const csv = await m.page.request.get((await link.evaluate((a) => (a as HTMLAnchorElement).href)));
    assert.equal(csv.status(), 200);
    assert.match(csv.headers()['content-type'] ?? '', /^text\/csv/);
    const rows = (await csv.text()).trimEnd().split('\r\n');
    assert.match(rows[0]!, /^receipt_id,created_at,/);
    assert.deepEqual(rows.slice(1).map((r) => r.split(',')[0]).sort(), [...sales].sort());

    await m.page.goto('/admin/split');
    const splitLink = m.page.getByRole('link', { name: 'Export transactions CSV' });
    await splitLink.waitFor();
    const tx = await m.page.request.get(await splitLink.evaluate((a) => (a as HTMLAnchorElement).href));
    assert.equal(tx.status(), 200);
    assert.equal((await tx.text()).split('\r\n')[0], 'id,timestamp,status,receipt_id,transaction_hash,currency,amount_base_units,fees_base_units,amount,fees');
    noProblems(m);
  });

  for (const phone of [false, true]) {
    const width = phone ? 'phone' : 'desktop';
    test(`${width}: an unpaid receipt's page shows its payment link and QR code; statuses in words; a repeated tracking status is one line`, async () => {
      const m = await merchant({ phone });
      await setUpSplit(m);
      const id = `link-${width}`;
      const created = await m.api('POST', '/api/receipts', { id, lineItems: [{ label: 'Tea', priceUsd: 3 }], totalUsd: 3 });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const paymentUrl: string = created.body.paymentUrl;

      await m.page.goto(`/admin/receipts/${id}`);
      const card = m.page.getByTestId('receipt-payment-link');
      await card.waitFor();
      assert.equal(await card.getByTestId('payment-url').innerText(), paymentUrl, 'the same link as at creation');
      await card.getByRole('button', { name: 'Copy link' }).waitFor();
      const qr = card.getByTestId('qr-code');
      assert.equal(await qr.getAttribute('aria-label'), `QR code of the payment link for receipt ${id}`);
      const box = await qr.boundingBox();
      assert.ok(box !== null && box.width >= 150, 'the QR code is drawn at a scannable size');
      await card.getByTestId('countdown').waitFor();
      const header = m.page.locator('.page-header [data-status]');
      assert.equal(await header.innerText(), 'Waiting for payment');
      assert.equal(await header.getAttribute('title'), 'pending');

      // Showing the receipt or its link records nothing: no "Link opened" on each visit.
      for (let i = 0; i < 3; i++) {
        await m.page.reload();
        await card.waitFor();
      }
      const seen = (await m.api('GET', `/api/receipts/${id}`)).body;
      assert.deepEqual(seen.statusHistory.map((e: { status: string }) => e.status), ['pending'], 'the admin app posted no tracking status');
      assert.equal(seen.paymentUrl, paymentUrl, "the admin session's answer carries the payment URL");
      const key = await h.t.key(m.wallet);
      assert.equal((await h.t.call(key, 'GET', `/api/receipts/${id}`)).body.paymentUrl, undefined, 'a subscription key does not get it');
      const u = new URL(paymentUrl);
      const payView = await h.t.call(null, 'GET', `/api${u.pathname}${u.search}`);
      assert.equal(payView.status, 200);
      assert.equal(payView.body.paymentUrl, undefined, 'nor does the payment page API');

      // A buyer opening the link three times: one line, "Link opened ×3".
      for (let i = 0; i < 3; i++) {
        const res = await h.t.call(null, 'POST', '/api/receipts/status', { receiptId: id, wallet: m.wallet, status: 'link_opened' });
        assert.equal(res.status, 200);
      }
      await m.page.reload();
      const entries = m.page.getByTestId('history-entry');
      await eventually(async () => assert.equal(await entries.count(), 2), RENDER_MS, 'two history entries');
      const opened = entries.nth(1);
      assert.equal(await opened.getAttribute('data-status'), 'link_opened');
      assert.match(await opened.innerText(), /^Link opened ×3\b/);
      assert.match(await opened.innerText(), /buyer's payment page/);
      assert.equal(await opened.locator('[data-status]').getAttribute('title'), 'link_opened');
      assert.match(await entries.nth(0).innerText(), /^Waiting for payment/);
      await card.waitFor();
      const pageWidth = await m.page.evaluate('document.documentElement.scrollWidth');
      assert.ok(Number(pageWidth) <= (phone ? 390 : 1280), `the receipt page is ${String(pageWidth)} px wide`);
      await screenshot(m.page, `receipt-payment-link-${width}`);

      // Marked paid by the merchant: the status in words, and the link is no longer offered.
      assert.equal((await m.api('POST', '/api/receipts/status', { receiptId: id, wallet: m.wallet, status: 'checkout_success' })).status, 200);
      await m.page.reload();
      await m.page.locator('.page-header [data-status="checkout_success"]').filter({ hasText: 'Paid (marked by you)' }).waitFor();
      assert.equal(await card.count(), 0);
      noProblems(m);
    });
  }

  test('an expired receipt no longer offers its payment link', async () => {
    const m = await merchant();
    await setUpSplit(m);
    const sale = await m.api('POST', '/api/receipts/terminal', { amountUsd: 2, label: 'Gum' });
    const id: string = sale.body.receipt.receiptId;
    await m.page.goto(`/admin/receipts/${encodeURIComponent(id)}`);
    await m.page.getByTestId('receipt-payment-link').waitFor();
    await h.t.deps.database.db
      .update(receipts)
      .set({ expiresAt: Date.now() - 1000 })
      .where(and(eq(receipts.wallet, m.wallet), eq(receipts.id, id)));
    await m.page.reload();
    await m.page.getByTestId('status-history').waitFor();
    assert.equal(await m.page.getByTestId('receipt-payment-link').count(), 0);
    noProblems(m);
  });

  test('writes accepted during an outage that could never apply are shown on the receipts page', async () => {
    const m = await merchant();
    const now = Date.now();
    await h.t.deps.database.db.insert(rejectedWrites).values([
      {
        writeId: `w-${m.wallet}-1`,
        wallet: m.wallet,
        kind: 'receipt.create',
        receiptId: 'clash-1',
        reason: 'conflict: Receipt clash-1 already exists with a different body',
        entry: { payload: { id: 'clash-1' } },
        acknowledgedAt: now - 60_000,
        rejectedAt: now,
      },
      {
        writeId: `w-${m.wallet}-2`,
        wallet: m.wallet,
        kind: 'receipt.status',
        receiptId: 'ghost-1',
        reason: 'receipt_not_found: no receipt ghost-1 reached the database within the wait for it',
        entry: { payload: { receiptId: 'ghost-1' } },
        acknowledgedAt: now - 60_000,
        rejectedAt: now,
      },
    ]);
    await m.page.goto('/admin/receipts');
    const notice = m.page.getByTestId('rejected-writes');
    await notice.waitFor();
    const text = await notice.innerText();
    assert.match(text, /2 requests accepted during a database outage could not be applied/);
    assert.match(text, /Receipt clash-1 was created twice with different contents/);
    assert.match(text, /receipt ghost-1 arrived, but that receipt never did/);
    noProblems(m);
  });

  test('sweeps waiting for gas or fees: a banner on every page until they are sent', async () => {
    const m = await merchant();
    const db = h.t.deps.database.db;
    const data = { waitingForGas: 2, atFeeCap: 1, deployerBalanceWei: '1500000000000000', deployerLow: true };
    await db.insert(chainStatus).values({ name: SWEEP_STATUS, data, updatedAt: Date.now() }).onConflictDoUpdate({ target: chainStatus.name, set: { data } });
    try {
      await m.page.goto('/admin/');
      const banner = m.page.getByTestId('sweep-banner');
      await banner.waitFor();
      const text = await banner.innerText();
      assert.match(text, /2 payments wait to be swept/);
      assert.match(text, /out of ETH \(0\.0015 ETH\)/);
      assert.match(text, /1 sweep waits for network fees/);
      await screenshot(m.page, 'sweep-banner');
      const ok = { waitingForGas: 0, atFeeCap: 0, deployerBalanceWei: '9000000000000000000', deployerLow: false };
      await db.update(chainStatus).set({ data: ok }).where(eq(chainStatus.name, SWEEP_STATUS));
      await m.page.getByRole('link', { name: 'Shop' }).click();
      await until(async () => (await m.page.getByTestId('sweep-banner').count()) === 0, RENDER_MS, 'the banner to go once sweeps are sent');
    } finally {
      await db.delete(chainStatus).where(eq(chainStatus.name, SWEEP_STATUS));
    }
    noProblems(m);
  });

  test('every POST of the admin app carries its own Idempotency-Key', async () => {
    const m = await h.open();
    const posts: { url: string; key: string | undefined }[] = [];
    m.page.on('request', (req) => {
      if (req.method() === 'POST' && new URL(req.url()).pathname.startsWith('/api/')) posts.push({ url: new URL(req.url()).pathname, key: req.headers()['idempotency-key'] });
    });
    await signInThroughPage(m);
    await m.page.goto('/admin/shop');
    await m.page.getByLabel('Processing fee (%)').fill('1');
    await m.page.getByRole('button', { name: 'Save settings' }).click();
    await m.page.getByText('Settings saved.').waitFor();
    await m.page.getByRole('button', { name: 'Save settings' }).click();
    await until(() => posts.length >= 4, RENDER_MS, 'four POSTs to be sent');
    assert.deepEqual(
      posts.map((p) => p.url),
      ['/api/auth/challenge', '/api/auth/login', '/api/shop/config', '/api/shop/config'],
    );
    for (const p of posts) assert.match(p.key ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, `${p.url} carries a UUID key`);
    assert.equal(new Set(posts.map((p) => p.key)).size, posts.length, 'one key per action: two saves are two actions');
    noProblems(m);
  });

  test('API keys: created keys are shown once and work; rotated and revoked keys are refused', async () => {
    const m = await merchant();
    const receiptsWith = (key: string) => fetch(`${h.base}/api/receipts`, { headers: { 'ocp-apim-subscription-key': key } });
    await m.page.goto('/admin/keys');
    await m.page.getByLabel('Name').fill('Online store');
    await m.page.getByRole('button', { name: 'Create key' }).click();
    const shown = m.page.getByTestId('new-keys');
    await shown.waitFor();
    assert.match(await shown.innerText(), /won.t be shown again/);
    const primary = await shown.getByTestId('key-primary').innerText();
    const secondary = await shown.getByTestId('key-secondary').innerText();
    assert.notEqual(primary, secondary);
    await screenshot(m.page, 'keys-created');
    assert.equal((await receiptsWith(primary)).status, 200);
    assert.equal((await receiptsWith(secondary)).status, 200);

    await m.page.getByRole('button', { name: 'I have copied them' }).click();
    await eventually(async () => assert.equal(await shown.count(), 0), RENDER_MS, 'the keys to be gone from the page');
    const sub = m.page.getByTestId('subscription').filter({ hasText: 'Online store' });
    assert.doesNotMatch(await sub.innerText(), new RegExp(primary), 'the list never shows a whole key');

    await sub.locator('li').filter({ hasText: 'primary' }).getByRole('button', { name: 'Rotate' }).click();
    const rotated = await m.page.getByTestId('new-keys').getByTestId('key-primary').innerText();
    assert.notEqual(rotated, primary);
    assert.equal((await receiptsWith(primary)).status, 401, 'the old primary key is refused');
    assert.equal((await receiptsWith(rotated)).status, 200);
    await m.page.getByRole('button', { name: 'I have copied them' }).click();

    await sub.getByRole('button', { name: 'Revoke' }).click();
    await sub.getByRole('button', { name: 'Yes, revoke' }).click();
    await m.page.locator('[data-testid="subscription"][data-status="revoked"]').waitFor();
    await screenshot(m.page, 'keys');
    for (const key of [rotated, secondary]) {
      const res = await receiptsWith(key);
      assert.equal(res.status, 401, 'the API refuses a revoked key');
      assert.equal(((await res.json()) as { error: string }).error, 'unauthorized');
    }
    noProblems(m);
  });

  test("webhooks: the server's refusal is shown; register shows the secret once; delete", async () => {
    const m = await merchant();
    await m.page.goto('/admin/webhooks');
    await m.page.getByLabel('Endpoint URL').fill('not a url');
    await m.page.getByRole('button', { name: 'Add endpoint' }).click();
    await m.page.getByText('Not a URL').waitFor();
    await m.page.getByLabel('Endpoint URL').fill('https://10.0.0.1/hooks');
    await m.page.getByRole('button', { name: 'Add endpoint' }).click();
    await m.page.getByRole('alert').filter({ hasText: 'url must point to a public address' }).waitFor();

    await m.page.getByLabel('Endpoint URL').fill('https://93.184.215.14/hooks/splitline');
    await m.page.getByLabel('receipt.tx_mismatch').uncheck();
    await m.page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = m.page.getByTestId('webhook-secret');
    await secret.waitFor();
    assert.match(await secret.innerText(), /won.t be shown again/);
    await m.page.getByTestId('webhook').waitFor();
    await screenshot(m.page, 'webhooks');
    const listed = (await m.api('GET', '/api/admin/webhooks')).body.webhooks;
    // Every event but the one unchecked, in the server's order.
    assert.deepEqual(listed.map((w: { events: string[] }) => w.events), [['receipt.payment_received', 'receipt.completed', 'receipt.expired', 'receipt.payment_reversed', 'receipt.refund_recorded', 'receipt.refund_verified', 'receipt.refund_unverified', 'receipt.refunded', 'write.rejected']]);
    await m.page.getByTestId('webhook').getByRole('button', { name: 'Delete' }).click();
    await m.page.getByText('No endpoints yet.').waitFor();
    assert.deepEqual((await m.api('GET', '/api/admin/webhooks')).body.webhooks, []);
    noProblems(m);
  });

  test('users: search with filters, and who is live', async () => {
    const now = Date.now();
    const tag = `t${now.toString(36)}`;
    await h.t.deps.users.upsert([
      { wallet: '0x3333333333333333333333333333333333333301', displayName: `Ada ${tag}`, xp: 900, domains: ['design'], languages: ['en'] },
      { wallet: '0x3333333333333333333333333333333333333302', displayName: `Bo ${tag}`, xp: 400, domains: ['code'], languages: ['en'] },
      {
        wallet: '0x3333333333333333333333333333333333333303',
        displayName: `Cy ${tag}`,
        xp: 100,
        live: true,
        spacePublic: true,
        lastHeartbeat: now,
        liveSince: now - 60_000,
        spaceUrl: 'https://space.example/cy',
        platform: 'web',
      },
    ], now);
    const m = await h.open({ account: superAccount });
    await signInThroughPage(m);
    await m.page.goto('/admin/users');
    const intro = await m.page.getByTestId('users-intro').innerText();
    assert.match(intro, /imported from another system/);
    assert.match(intro, /heartbeat/);
    await m.page.getByTestId('live-list').getByText(`Cy ${tag}`).waitFor();
    await m.page.getByLabel('Name or wallet').fill(tag);
    await m.page.getByRole('button', { name: 'Search' }).click();
    await m.page.getByTestId('user-row').nth(2).waitFor();
    assert.deepEqual(
      (await m.page.getByTestId('user-row').locator('strong').allInnerTexts()).map((t) => t.split(' ')[0]),
      ['Ada', 'Bo', 'Cy'],
      'highest XP first',
    );
    await m.page.getByLabel('Domains').fill('design');
    await m.page.getByLabel('Min XP').fill('-1');
    await m.page.getByRole('button', { name: 'Search' }).click();
    await m.page.getByText('A whole number of 0 or more').waitFor();
    await m.page.getByLabel('Min XP').fill('500');
    await m.page.getByRole('button', { name: 'Search' }).click();
    await m.page.getByText('1 shown of 1 matching').waitFor();
    await screenshot(m.page, 'users');
    noProblems(m);
  });

  test('phone-sized screens: the main pages fit 390 px without sideways scrolling', async () => {
    const m = await merchant({ phone: true });
    await setUpSplit(m);
    await m.api('POST', '/api/inventory', { sku: 'BAGEL', name: 'Everything bagel', priceUsd: 3.25, stockQty: 40 });
    await m.api('POST', '/api/receipts/terminal', { amountUsd: 4.5, label: 'Latte' });
    const pages: [string, string][] = [
      ['', 'today-stats'],
      ['terminal', 'terminal-amount'],
      ['receipts', 'receipt-row'],
      ['inventory', 'inventory-row'],
      ['split', 'stored-split'],
      ['shop', 'jurisdiction-row'],
      ['keys', ''],
      ['users', ''],
    ];
    for (const [route, ready] of pages) {
      await m.page.goto(`/admin/${route}`);
      if (ready === 'jurisdiction-row') await m.page.getByRole('button', { name: 'Save settings' }).waitFor();
      else if (ready !== '') await m.page.getByTestId(ready).first().waitFor();
      else await m.page.locator('h1').waitFor();
      await screenshot(m.page, `phone-${route || 'overview'}`);
      const width = await m.page.evaluate('document.documentElement.scrollWidth');
      assert.ok(Number(width) <= 390, `/admin/${route} is ${String(width)} px wide`);
    }
    await m.page.getByRole('button', { name: 'Menu' }).click();
    await m.page.getByRole('link', { name: 'Terminal' }).click();
    for (const k of ['4', '5', '0']) await m.page.getByRole('button', { name: k, exact: true }).click();
    await m.page.getByRole('button', { name: 'Charge $4.50' }).click();
    await m.page.getByTestId('qr-code').waitFor();
    const width = await m.page.evaluate('document.documentElement.scrollWidth');
    assert.ok(Number(width) <= 390, `the terminal receipt is ${String(width)} px wide`);
    await screenshot(m.page, 'phone-terminal-receipt');
    noProblems(m);
  });
});

/**
 * The terminal as a card reader: after the sale is rung up, its card follows the receipt live
 * until a transfer on the dev chain into the receipt's own payment address completes it.
 */
describe('terminal on a dev chain', { skip: skipReason, timeout: 150_000 }, () => {
  let tc: TestChain;
  let t: TestApp;
  let base: string;
  let browser: Browser;
  useChainBrowser({ CONFIRMATIONS: '1' }, (s) => ({ tc, t, base, browser } = s));

  test('the card shows the live status, paid and due, and "Paid" once the transfer to payTo completes it', async () => {
    const s = await signIn(t);
    const split = await admin(t, s, 'POST', '/api/split/deploy', {
      recipients: [
        { address: s.wallet, sharesBps: 9950 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    });
    assert.equal(split.status, 200, JSON.stringify(split.body));
    const context = await browser.newContext({ baseURL: base, viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'UTC' });
    const [name, value] = s.cookie.split('=') as [string, string];
    await context.addCookies([{ name, value, url: base }]);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.push(`console: ${msg.text()}`);
    });

    await page.goto('/admin/terminal');
    await page.getByTestId('signed-in-wallet').waitFor();
    for (const k of ['1', '2', '0', '0']) await page.getByRole('button', { name: k, exact: true }).click();
    await page.getByRole('button', { name: 'Charge $12.00' }).click();
    const card = page.getByTestId('created-receipt');
    await card.waitFor();
    await card.getByTestId('qr-code').waitFor();
    const url = new URL(await card.getByTestId('payment-url').innerText());
    const id = decodeURIComponent(url.pathname.split('/').pop()!);
    await card.getByTestId('live-state').filter({ hasText: 'Waiting for the buyer to pay' }).waitFor();
    assert.equal(await card.getByTestId('live-paid').innerText(), '0 USDC');
    assert.equal(await card.getByTestId('live-due').innerText(), '12 USDC');
    assert.match(await card.getByTestId('countdown').innerText(), /^Pay within (1:00:00|59:[0-5]\d)$/);
    await screenshot(page, 'terminal-live-waiting');

    // The buyer pays from any wallet to the receipt's own payment address (as its QR-code page says).
    const key = await t.key(s.wallet);
    const payTo = await waitFor(async () => {
      const res = await t.call(key, 'GET', `/api/receipts/${encodeURIComponent(id)}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return (res.body.payTo as Hex | null) ?? undefined;
    }, CHAIN_WAIT_MS, 'the receipt to have its payment address');
    const wallet = createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(1) });
    const hash = await wallet.writeContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [payTo, 12_000_000n] });
    assert.equal((await tc.chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');

    await card.getByTestId('live-paid-banner').filter({ hasText: 'Paid' }).waitFor({ timeout: 30_000 });
    assert.equal(await card.getByTestId('live-paid').innerText(), '12 USDC');
    assert.equal(await card.getByTestId('live-due').innerText(), '0 USDC');
    assert.equal(await card.getByTestId('live-status').getAttribute('data-status'), 'completed');
    assert.equal(await card.getByRole('heading', { level: 2 }).innerText(), 'Payment complete');
    assert.equal(await card.getByTestId('countdown').count(), 0);
    await screenshot(page, 'terminal-live-paid');
    const detail = (await t.call(key, 'GET', `/api/receipts/${encodeURIComponent(id)}`)).body;
    assert.deepEqual([detail.status, detail.exception, detail.amountPaid, detail.amountDue], ['completed', null, '12000000', '0']);

    // Closing the card (New sale) leaves the terminal ready for the next one.
    await card.getByRole('button', { name: 'New sale' }).click();
    await page.getByTestId('terminal-amount').filter({ hasText: '$0.00' }).waitFor();
    assert.deepEqual(problems, []);
    await context.close();
  });
});
