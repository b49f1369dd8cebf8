/**
 * How the server serves the admin app (no browser needed): security headers, the client-route
 * fallback, built files, the path prefix, and a clear 503 when the app has not been built.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerWebApp } from '../../src/http/web.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { admin, signIn } from '../helpers/session.ts';

const INDEX = '<!doctype html><html><head><base href="/admin/" /><script type="module" src="./assets/app-abc123.js"></script></head><body></body></html>';

function checkPageHeaders(headers: Record<string, unknown>) {
  const csp = String(headers['content-security-policy']);
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /script-src 'self'(;|$)/, 'no inline scripts');
  assert.match(csp, /frame-ancestors 'none'/);
  assert.equal(headers['x-frame-options'], 'DENY');
  assert.equal(headers['x-content-type-options'], 'nosniff');
}

async function appWith(distDir: string): Promise<FastifyInstance> {
  // The same prefix handling as buildApp's PUBLIC_BASE_PATH.
  const app = Fastify({
    rewriteUrl: (req) => (req.url?.startsWith('/portalpay/') ? req.url.slice('/portalpay'.length) : (req.url ?? '/')),
  });
  await registerWebApp(app, { distDir, publicBasePath: '/portalpay' });
  await app.ready();
  return app;
}

describe('serving the built admin app', () => {
  let dir: string;
  let app: FastifyInstance;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'splitline-web-'));
    mkdirSync(path.join(dir, 'assets'));
    writeFileSync(path.join(dir, 'index.html'), INDEX);
    writeFileSync(path.join(dir, 'assets', 'app-abc123.js'), 'console.log(1);');
    writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    app = await appWith(dir);
  });
  after(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('/admin redirects to /admin/, which is the app with strict headers', async () => {
    const redirect = await app.inject({ url: '/admin' });
    assert.equal(redirect.statusCode, 301);
    assert.equal(redirect.headers.location, 'admin/');
    const page = await app.inject({ url: '/admin/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.equal(page.headers['cache-control'], 'no-cache');
    checkPageHeaders(page.headers);
    assert.ok(page.body.includes('<base href="/admin/" />'));
  });

  test('client routes fall back to index.html; built files are served, hashed assets cached for good', async () => {
    for (const url of ['/admin/receipts/pos_123', '/admin/split', '/admin/keys?x=1']) {
      const res = await app.inject({ url });
      assert.equal(res.statusCode, 200, url);
      assert.ok(res.body.includes('<base href="/admin/" />'), url);
    }
    const js = await app.inject({ url: '/admin/assets/app-abc123.js' });
    assert.equal(js.statusCode, 200);
    assert.match(String(js.headers['content-type']), /javascript/);
    assert.match(String(js.headers['cache-control']), /immutable/);
    checkPageHeaders(js.headers);
    assert.equal((await app.inject({ url: '/admin/favicon.svg' })).statusCode, 200);
  });

  test('a missing asset is 404, and nothing outside the build is reachable', async () => {
    assert.equal((await app.inject({ url: '/admin/assets/gone-000.js' })).statusCode, 404);
    for (const url of ['/admin/%2e%2e/%2e%2e/package.json', '/admin/..%2F..%2Fpackage.json', '/admin/.hidden.txt']) {
      const res = await app.inject({ url });
      assert.ok(!res.body.includes('"dependencies"'), url);
    }
  });

  test('under PUBLIC_BASE_PATH the page names its own base', async () => {
    const res = await app.inject({ url: '/portalpay/admin/receipts' });
    assert.equal(res.statusCode, 200);
    assert.ok(res.body.includes('<base href="/portalpay/admin/" />'));
  });

  test('without a build, /admin answers 503 saying how to build it', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'splitline-web-empty-'));
    const bare = await appWith(empty);
    try {
      const res = await bare.inject({ url: '/admin/terminal' });
      assert.equal(res.statusCode, 503);
      assert.match(res.body, /npm run build:web/);
      checkPageHeaders(res.headers);
    } finally {
      await bare.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('the real app', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ PLATFORM_FEE_BPS: '75' });
  });
  after(async () => {
    await t.close();
  });

  test('answers /admin/ with the CSP whether or not the app is built', async () => {
    const res = await t.app.inject({ url: '/admin/' });
    assert.ok([200, 503].includes(res.statusCode));
    checkPageHeaders(res.headers);
  });

  test('GET /api/admin/platform gives the split editor its locked platform line', async () => {
    assert.equal((await t.call(null, 'GET', '/api/admin/platform')).status, 401);
    const key = await t.key('0x' + '44'.repeat(20));
    assert.equal((await t.call(key, 'GET', '/api/admin/platform')).status, 401, 'not with a subscription key');
    const s = await signIn(t);
    const res = await admin(t, s, 'GET', '/api/admin/platform');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      platformRecipientAddress: '0x000000000000000000000000000000000000beef',
      platformFeeBps: 75,
      chainId: t.config.chainId,
      brandName: t.config.brandName,
      containerType: 'platform',
      brandKey: t.config.brandKey,
    });
  });
});
