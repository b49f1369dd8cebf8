/**
 * The payment page over HTTP (no browser): its framing headers come from the shop the URL's
 * receipt belongs to, computed per request; assets, the path prefix, and the page's tracking route.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ensureWebBuild } from '../scripts/ensure-web-build.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { admin, signIn, type Session } from './helpers/session.ts';

interface Shop {
  s: Session;
  key: string;
}

async function shop(t: TestApp, allowedEmbedOrigins: string[]): Promise<Shop> {
  const s = await signIn(t);
  const res = await admin(t, s, 'POST', '/api/shop/config', { processingFeePct: 0, allowedEmbedOrigins });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { s, key: await t.key(s.wallet) };
}

/** A receipt's payment path and query, as the payment URL gives them. */
async function receipt(t: TestApp, sh: Shop, id: string): Promise<string> {
  const res = await t.call(sh.key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Tea', priceUsd: 4.5 }], totalUsd: 4.5 });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const url = new URL(res.body.paymentUrl);
  return url.pathname + url.search;
}

function frameAncestors(headers: Record<string, unknown>): string {
  const csp = String(headers['content-security-policy']);
  const directive = csp.split(';').map((d) => d.trim()).find((d) => d.startsWith('frame-ancestors '));
  assert.ok(directive !== undefined, `a frame-ancestors directive in ${csp}`);
  return directive;
}

function checkPageHeaders(headers: Record<string, unknown>) {
  const csp = String(headers['content-security-policy']);
  assert.match(csp, /(^|; )script-src 'self'(;|$)/, 'only its own scripts, none inline');
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  assert.match(csp, /connect-src 'self'/);
  assert.equal(headers['x-frame-options'], undefined, 'no X-Frame-Options: frame-ancestors decides');
  assert.equal(headers['referrer-policy'], 'no-referrer', 'the token in the URL never leaves as a Referer');
  assert.equal(headers['cache-control'], 'no-store');
  assert.equal(headers['x-content-type-options'], 'nosniff');
}

describe('the payment page over HTTP', () => {
  let t: TestApp;
  before(async () => {
    await ensureWebBuild((line) => console.log(line));
    t = await startTestApp();
  });
  after(async () => {
    await t?.close();
  });

  test("frame-ancestors is 'self' plus the shop's allowed origins; no X-Frame-Options", async () => {
    const sh = await shop(t, ['https://shop.example', 'http://127.0.0.1:5173']);
    const url = await receipt(t, sh, 'hdr-1');
    const res = await t.call(null, 'GET', url);
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    checkPageHeaders(res.headers);
    assert.equal(frameAncestors(res.headers), "frame-ancestors 'self' https://shop.example http://127.0.0.1:5173");
    assert.match(res.body, /<base href="\/pay\/" \/>/);
    assert.match(res.body, /<script type="module" crossorigin src="\.\/assets\/[^"]+\.js"><\/script>/);
    assert.doesNotMatch(res.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  });

  test("a shop with no allowed origins: frame-ancestors 'self' only", async () => {
    const sh = await shop(t, []);
    const res = await t.call(null, 'GET', await receipt(t, sh, 'hdr-2'));
    assert.equal(res.status, 200);
    checkPageHeaders(res.headers);
    assert.equal(frameAncestors(res.headers), "frame-ancestors 'self'");
  });

  test("an unknown receipt, a wrong or missing token: 404, the page, frame-ancestors 'self'", async () => {
    const sh = await shop(t, ['https://shop.example']);
    const url = await receipt(t, sh, 'hdr-3');
    for (const wrong of ['/pay/hdr-3', '/pay/hdr-3?t=AAAAAAAAAAAAAAAAAAAAAAAA', '/pay/nope?' + url.split('?')[1]]) {
      const res = await t.call(null, 'GET', wrong);
      assert.equal(res.status, 404, wrong);
      checkPageHeaders(res.headers);
      assert.equal(frameAncestors(res.headers), "frame-ancestors 'self'", wrong);
      assert.match(res.body, /<base href="\/pay\/" \/>/, 'the page explains itself');
    }
  });

  test('the header follows the shop list on every request', async () => {
    const sh = await shop(t, ['https://a.example']);
    const url = await receipt(t, sh, 'hdr-4');
    assert.equal(frameAncestors((await t.call(null, 'GET', url)).headers), "frame-ancestors 'self' https://a.example");
    await admin(t, sh.s, 'POST', '/api/shop/config', { processingFeePct: 0, allowedEmbedOrigins: ['https://b.example'] });
    assert.equal(frameAncestors((await t.call(null, 'GET', url)).headers), "frame-ancestors 'self' https://b.example");
  });

  test('the admin app still refuses every frame', async () => {
    const res = await t.call(null, 'GET', '/admin/');
    assert.equal(res.headers['x-frame-options'], 'DENY');
    assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/);
  });

  test('built assets under /pay/assets/, cached for good; nothing else', async () => {
    const sh = await shop(t, []);
    const page = await t.call(null, 'GET', await receipt(t, sh, 'hdr-5'));
    const script = /src="\.\/assets\/([^"]+\.js)"/.exec(page.body)?.[1];
    assert.ok(script !== undefined);
    const asset = await t.call(null, 'GET', `/pay/assets/${script}`);
    assert.equal(asset.status, 200);
    assert.match(String(asset.headers['content-type']), /javascript/);
    assert.match(String(asset.headers['cache-control']), /immutable/);
    for (const bad of ['/pay/assets/nope.js', '/pay/assets/..%2Fpay.html', '/pay/assets/.hidden.js']) {
      assert.equal((await t.call(null, 'GET', bad)).status, 404, bad);
    }
  });

  test('tracking statuses through the payment URL', async () => {
    const sh = await shop(t, []);
    const url = await receipt(t, sh, 'trk-1');
    const query = url.split('?')[1];
    const opened = await t.call(null, 'POST', `/api/pay/trk-1/status?${query}`, { status: 'link_opened' });
    assert.equal(opened.status, 200, JSON.stringify(opened.body));
    assert.deepEqual(opened.body, { status: 'link_opened' });
    assert.equal((await t.call(null, 'POST', `/api/pay/trk-1/status?${query}`, { status: 'checkout_initialized' })).status, 200);
    const refused = await t.call(null, 'POST', `/api/pay/trk-1/status?${query}`, { status: 'completed' });
    assert.equal(refused.status, 400, 'only tracking statuses');
    assert.equal(refused.body.error, 'invalid_input');
    // A wrong payment URL is answered as an unpaid receipt would be, and changes nothing.
    const wrong = await t.call(null, 'POST', '/api/pay/trk-1/status?t=AAAAAAAAAAAAAAAAAAAAAAAA', { status: 'buyer_logged_in' });
    assert.equal(wrong.status, 200);
    assert.deepEqual(wrong.body, { status: 'buyer_logged_in' });
    const detail = await t.call(sh.key, 'GET', '/api/receipts/trk-1');
    assert.equal(detail.body.status, 'checkout_initialized');
    assert.deepEqual(
      detail.body.statusHistory.map((h: { status: string }) => h.status),
      ['pending', 'link_opened', 'checkout_initialized'],
    );
  });
});

describe('the payment page under PUBLIC_BASE_PATH', () => {
  let t: TestApp;
  before(async () => {
    await ensureWebBuild((line) => console.log(line));
    t = await startTestApp({ PUBLIC_BASE_PATH: '/portalpay' });
  });
  after(async () => {
    await t?.close();
  });

  test('the base href carries the prefix the request came in with', async () => {
    const sh = await shop(t, ['https://shop.example']);
    const url = await receipt(t, sh, 'pfx-1');
    const query = url.split('?')[1];
    const prefixed = await t.call(null, 'GET', `/portalpay/pay/pfx-1?${query}`);
    assert.equal(prefixed.status, 200);
    assert.match(prefixed.body, /<base href="\/portalpay\/pay\/" \/>/);
    assert.equal(frameAncestors(prefixed.headers), "frame-ancestors 'self' https://shop.example");
    const bare = await t.call(null, 'GET', `/pay/pfx-1?${query}`);
    assert.match(bare.body, /<base href="\/pay\/" \/>/);
  });
});
