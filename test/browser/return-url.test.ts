/**
 * The payment page's way back to the shop, in a real browser (Debian's chromium, headless): no
 * "Back to shop" while the receipt waits for money; a link to its returnUrl once it is paid,
 * failed (expired) or refunded, opening in the whole window, never a redirect; none for an origin
 * the shop no longer allows, nor for a stored URL that is not http(s).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { receipts } from '../../src/db/schema.ts';
import { saveShopConfig } from '../../src/domain/shop.ts';
import { randomWallet } from '../helpers/app.ts';
import { RENDER_MS, screenshot, skipReason, startHarness, type Harness } from './harness.ts';
import type { ReceiptStatus } from '../../src/contract/receipts.ts';

if (skipReason) console.log(skipReason);

const SHOP = 'https://shop.example';
const RETURN = `${SHOP}/orders/SO-20417?paid=1`;

describe('payment page: Back to shop', { skip: skipReason }, () => {
  let h: Harness;
  let wallet: string;
  let key: string;
  before(async () => {
    h = await startHarness();
    wallet = randomWallet();
    await saveShopConfig(h.t.deps.database.db, wallet, { processingFeePct: 0, allowedEmbedOrigins: [SHOP] });
    key = await h.t.key(wallet);
  });
  after(async () => {
    await h?.close();
  });

  /** A receipt with RETURN, set to `status` (and exception) in the database as the chain worker would; its page's path. */
  async function receipt(id: string, change?: { status: ReceiptStatus; exception?: 'expired' | null; returnUrl?: string }): Promise<string> {
    const res = await h.t.call(key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Coffee', priceUsd: 3.5 }], totalUsd: 3.5, returnUrl: RETURN });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    if (change !== undefined) {
      await h.t.deps.database.db
        .update(receipts)
        .set({ status: change.status, exception: change.exception ?? null, ...(change.returnUrl === undefined ? {} : { returnUrl: change.returnUrl }) })
        .where(and(eq(receipts.wallet, wallet), eq(receipts.id, id)));
    }
    const url = new URL(res.body.paymentUrl as string);
    return `${url.pathname}${url.search}`;
  }

  test('none while unpaid; a link to the returnUrl once paid, failed (expired) or refunded', async () => {
    const m = await h.open({ wallet: false });
    const unpaid = await receipt('back-unpaid');
    await m.page.goto(unpaid);
    await m.page.getByTestId('brand').waitFor({ timeout: RENDER_MS });
    await m.page.getByText('Receipt back-unpaid').waitFor();
    assert.equal(await m.page.getByTestId('back-to-shop').count(), 0, 'no way back while the receipt waits for money');

    for (const [id, change] of [
      ['back-paid', { status: 'completed' }],
      ['back-expired', { status: 'failed', exception: 'expired' as const }],
      ['back-refunded', { status: 'refunded' }],
    ] as const) {
      await m.page.goto(await receipt(id, change));
      const link = m.page.getByTestId('back-to-shop');
      await link.waitFor({ timeout: RENDER_MS });
      assert.equal(await link.textContent(), 'Back to shop');
      assert.equal(await link.getAttribute('href'), RETURN, id);
      assert.equal(await link.getAttribute('target'), '_top');
      assert.equal(await link.getAttribute('rel'), 'noopener noreferrer');
      if (id === 'back-paid') await screenshot(m.page, 'pay-back-to-shop');
    }
    // A link, not a redirect: the page stays where it is until the buyer follows it.
    assert.equal(new URL(m.page.url()).origin, h.base);
    assert.deepEqual(m.problems, []);
  });

  test('none for an origin the shop no longer allows, nor for a stored URL that is not http(s)', async () => {
    const m = await h.open({ wallet: false });
    const other = randomWallet();
    await saveShopConfig(h.t.deps.database.db, other, { processingFeePct: 0, allowedEmbedOrigins: [SHOP] });
    const otherKey = await h.t.key(other);
    const created = await h.t.call(otherKey, 'POST', '/api/receipts', { id: 'back-withdrawn', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2, returnUrl: RETURN });
    assert.equal(created.status, 201);
    await h.t.deps.database.db.update(receipts).set({ status: 'completed' }).where(and(eq(receipts.wallet, other), eq(receipts.id, 'back-withdrawn')));
    await saveShopConfig(h.t.deps.database.db, other, { processingFeePct: 0, allowedEmbedOrigins: ['https://elsewhere.example'] });
    const page = new URL(created.body.paymentUrl as string);
    await m.page.goto(`${page.pathname}${page.search}`);
    await m.page.getByText('Receipt back-withdrawn').waitFor({ timeout: RENDER_MS });
    // The status panel is drawn from the same answer the link would come from.
    await m.page.waitForFunction(() => document.querySelector('.pay-panel, [data-testid="no-chain"]') !== null, undefined, { timeout: RENDER_MS });
    assert.equal(await m.page.getByTestId('back-to-shop').count(), 0);

    await m.page.goto(await receipt('back-js', { status: 'completed', returnUrl: 'javascript:alert(document.domain)' }));
    await m.page.getByText('Receipt back-js').waitFor({ timeout: RENDER_MS });
    await m.page.waitForFunction(() => document.querySelector('.pay-panel, [data-testid="no-chain"]') !== null, undefined, { timeout: RENDER_MS });
    assert.equal(await m.page.getByTestId('back-to-shop').count(), 0);
    assert.equal(await m.page.locator('a[href^="javascript:"]').count(), 0);
    assert.deepEqual(m.problems, []);
  });
});
