/**
 * Security headers on every response: each operation of the OpenAPI document (answered and
 * refused), the framework's own refusals, /docs and its assets, the admin app, the payment page
 * (framable by its shop's origins: no X-Frame-Options from the application), HSTS only over https,
 * and the API reference still working in a real browser under its CSP.
 */
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import { API_CSP, HSTS, pageCsp } from '../../src/http/security-headers.ts';
import { randomWallet, startTestApp, type TestApp } from '../helpers/app.ts';
import { admin, signIn } from '../helpers/session.ts';
import { CHROMIUM, skipReason } from '../browser/harness.ts';
import { routesFromOpenApi } from './route-table.ts';

type Headers = Record<string, string | string[] | number | undefined>;

let t: TestApp;
let key: string;

before(async () => {
  t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '1000000' });
  key = await t.key(randomWallet(), { rateLimitPerMinute: 100_000 });
});
after(async () => {
  await t.close();
});

/** What every response carries, whatever it is. */
function assertBase(h: Headers, what: string): void {
  assert.equal(h['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  assert.match(String(h['referrer-policy']), /^(no-referrer|same-origin|strict-origin-when-cross-origin)$/, `${what}: referrer-policy`);
  assert.equal(h['strict-transport-security'], undefined, `${what}: no HSTS over http`);
}

/** A JSON answer (or any non-page answer) outside /pay/. */
function assertApi(h: Headers, what: string): void {
  assertBase(h, what);
  assert.equal(h['referrer-policy'], 'no-referrer', `${what}: referrer-policy`);
  assert.equal(h['x-frame-options'], 'DENY', `${what}: x-frame-options`);
  assert.equal(h['content-security-policy'], API_CSP, `${what}: CSP`);
  assert.equal(h['cross-origin-resource-policy'], 'same-origin', `${what}: CORP`);
}

describe('every operation of the OpenAPI document', () => {
  test('answers with the API headers, with and without credentials', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    assertApi((await t.app.inject({ method: 'GET', url: '/openapi.json' })).headers, 'GET /openapi.json');
    const routes = routesFromOpenApi(doc);
    assert.ok(routes.length >= 30);
    for (const r of routes) {
      const url = r.path.replace(/\{[^}]+\}/g, 'x');
      for (const headers of [{}, { 'ocp-apim-subscription-key': key }]) {
        const res = await t.app.inject({ method: r.method, url, headers, ...(r.method === 'GET' ? {} : { payload: {} }) });
        assert.ok(res.statusCode < 500 || res.statusCode === 503, `${r.method} ${url} → ${res.statusCode}`);
        assertApi(res.headers, `${r.method} ${url} → ${res.statusCode}`);
      }
    }
  });
});

describe('refusals made by the framework and the error handler', () => {
  const cases: [string, () => Promise<{ statusCode: number; headers: Headers }>, number][] = [
    ['no route', () => t.app.inject({ url: '/no/such/route' }), 404],
    ['wrong method', () => t.app.inject({ method: 'DELETE', url: '/api/receipts' }), 404],
    ['malformed JSON', () => t.app.inject({ method: 'POST', url: '/api/receipts/status', headers: { 'content-type': 'application/json' }, payload: '{' }), 400],
    ['unsupported media type', () => t.app.inject({ method: 'POST', url: '/api/receipts/status', headers: { 'content-type': 'application/xml' }, payload: '<a/>' }), 415],
    ['payload too large', () => t.app.inject({ method: 'POST', url: '/api/receipts/status', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ a: 'x'.repeat(300_000) }) }), 413],
    ['malformed URL (answered before routing)', () => t.app.inject({ url: '/api/receipts/%ZZ' }), 400],
    ['over-long path parameter (answered before routing)', () => t.app.inject({ url: `/api/receipts/${'x'.repeat(300)}` }), 400],
    ['deprecated route', () => t.app.inject({ method: 'POST', url: '/api/split/withdraw', headers: { 'ocp-apim-subscription-key': key } }), 410],
    ['HEAD', () => t.app.inject({ method: 'HEAD', url: '/healthz' }), 200],
  ];
  for (const [what, send, status] of cases) {
    test(`${what}: ${status} with the API headers`, async () => {
      const res = await send();
      assert.equal(res.statusCode, status);
      assertApi(res.headers, what);
    });
  }

  test('a rate-limited answer (429) carries them too', async () => {
    const limited = await t.key(randomWallet(), { rateLimitPerMinute: 1 });
    let res = await t.app.inject({ url: '/api/receipts', headers: { 'ocp-apim-subscription-key': limited } });
    for (let i = 0; i < 3 && res.statusCode !== 429; i++) res = await t.app.inject({ url: '/api/receipts', headers: { 'ocp-apim-subscription-key': limited } });
    assert.equal(res.statusCode, 429);
    assertApi(res.headers, '429');
  });

  test('a refusal from an admin route (the APK download) carries them too', async () => {
    const s = await signIn(t);
    const res = await admin(t, s, 'GET', '/api/admin/apk/splitline');
    assert.ok([403, 404].includes(res.status), String(res.status));
    assertApi(res.headers, 'apk');
  });
});

describe('pages', () => {
  test('/docs gets the page CSP, its assets the API CSP; nothing can frame them', async () => {
    const page = await t.app.inject({ url: '/docs' });
    assert.equal(page.statusCode, 200);
    assertBase(page.headers, '/docs');
    assert.equal(page.headers['content-security-policy'], pageCsp(t.config.siteUrl));
    assert.equal(page.headers['x-frame-options'], 'DENY');
    const assets = [...page.body.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => new URL(m[1]!, 'http://app.test/docs/').pathname);
    assert.ok(assets.length >= 3);
    for (const asset of assets) {
      const res = await t.app.inject({ url: asset });
      assert.equal(res.statusCode, 200, asset);
      assertApi(res.headers, asset);
    }
  });

  test("/admin keeps the admin app's own CSP and framing rules", async () => {
    for (const url of ['/admin', '/admin/', '/admin/settings']) {
      const res = await t.app.inject({ url });
      assertBase(res.headers, url);
      assert.equal(res.headers['x-frame-options'], 'DENY', url);
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /frame-ancestors 'none'/, url);
      if (res.statusCode === 200) assert.match(csp, /script-src 'self'/, `${url}: the admin CSP, not the API one`);
    }
  });

  test('/pay/<id> is left framable by its route: no X-Frame-Options, frame-ancestors from the shop', async () => {
    const wallet = randomWallet();
    await t.call(await t.key(wallet), 'POST', '/api/receipts', { id: 'frame-me', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
    const created = await t.call(await t.key(wallet), 'POST', '/api/receipts', { id: 'frame-me', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
    const url = new URL(created.body.paymentUrl);
    for (const path of [url.pathname + url.search, '/pay/unknown']) {
      const res = await t.app.inject({ url: path });
      assertBase(res.headers, path);
      assert.equal(res.headers['x-frame-options'], undefined, `${path}: no X-Frame-Options`);
      assert.doesNotMatch(String(res.headers['content-security-policy']), /frame-ancestors 'none'/, path);
    }
  });
});

describe('Strict-Transport-Security', () => {
  test('is sent on every kind of answer when SITE_URL is https, and never over plain http', async () => {
    const secure = await startTestApp({ SITE_URL: 'https://pay.example' });
    try {
      for (const url of ['/healthz', '/api/receipts', '/no/such/route', '/docs', '/admin/', '/pay/x', '/api/receipts/%ZZ']) {
        const res = await secure.app.inject({ url });
        assert.equal(res.headers['strict-transport-security'], HSTS, url);
      }
    } finally {
      await secure.close();
    }
    assert.equal((await t.app.inject({ url: '/healthz' })).headers['strict-transport-security'], undefined);
  });
});

/** A loopback port free right now, so SITE_URL can name the address the app will listen on. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the API reference in a real browser', { skip: skipReason }, () => {
  test('renders every operation under its CSP and tries one out, with no violation or script error', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const served = await startTestApp({ SITE_URL: base });
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'], timeout: 30_000 });
    try {
      await served.app.listen({ host: '127.0.0.1', port });
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
      page.on('console', (msg) => {
        if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
      });
      await page.goto(`${base}/docs`);
      await page.waitForSelector('.opblock', { timeout: 15_000 });
      const operations = await page.locator('.opblock').count();
      assert.ok(operations >= 30, `${operations} operations rendered`);
      // Try one out (try-it-out is on by default): a fetch that connect-src must allow.
      await page.locator('#operations-health-getHealth .opblock-summary').click();
      await page.locator('#operations-health-getHealth .execute').click();
      const answered = page.locator('#operations-health-getHealth .live-responses-table .response .response-col_status');
      await answered.first().waitFor({ timeout: 10_000 });
      assert.match(await answered.first().innerText(), /200/);
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
      await served.close();
    }
  });
});
