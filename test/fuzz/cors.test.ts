/**
 * The CORS policy: by default no response allows a cross-origin browser read and preflights find
 * nothing; with CORS_ORIGINS, the listed origins (only) may call the subscription-key routes
 * (only), never with credentials. Admin, session and credential-free routes stay same-origin.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { randomWallet, startTestApp, type TestApp } from '../helpers/app.ts';
import { signIn } from '../helpers/session.ts';

const CONSOLE = 'https://console.example';
const preflight = (origin: string, method: string) => ({ origin, 'access-control-request-method': method, 'access-control-request-headers': 'ocp-apim-subscription-key' });

function assertNoCors(h: Record<string, unknown>, what: string): void {
  for (const name of Object.keys(h)) assert.ok(!name.startsWith('access-control-'), `${what}: ${name} must not be sent`);
}

describe('default: no CORS', () => {
  let t: TestApp;
  let key: string;
  before(async () => {
    t = await startTestApp();
    key = await t.key(randomWallet());
  });
  after(async () => {
    await t.close();
  });

  test('a preflight to a developer route allows nothing', async () => {
    const res = await t.app.inject({ method: 'OPTIONS', url: '/api/receipts', headers: preflight(CONSOLE, 'GET') });
    assert.equal(res.statusCode, 404);
    assertNoCors(res.headers, 'preflight');
  });

  test('answers to cross-origin requests carry no CORS header, whatever the route', async () => {
    const wallet = randomWallet();
    const cases = [
      t.app.inject({ url: '/api/receipts', headers: { origin: CONSOLE, 'ocp-apim-subscription-key': key } }),
      t.app.inject({ url: '/api/receipts', headers: { origin: CONSOLE } }),
      t.app.inject({ url: '/api/pay/x?t=y', headers: { origin: CONSOLE } }),
      t.app.inject({ method: 'POST', url: '/api/receipts/status', headers: { origin: CONSOLE }, payload: { receiptId: 'r', wallet, status: 'link_opened' } }),
      t.app.inject({ method: 'POST', url: '/api/auth/challenge', headers: { origin: CONSOLE }, payload: { wallet } }),
    ];
    for (const res of await Promise.all(cases)) assertNoCors(res.headers, `${res.statusCode}`);
  });
});

describe(`CORS_ORIGINS=${CONSOLE}`, () => {
  let t: TestApp;
  let key: string;
  before(async () => {
    t = await startTestApp({ CORS_ORIGINS: `${CONSOLE}, http://localhost:3000` });
    key = await t.key(randomWallet());
  });
  after(async () => {
    await t.close();
  });

  test('a preflight from a listed origin to a key route is allowed, for that method and the key header', async () => {
    for (const [method, url] of [
      ['GET', '/api/receipts'],
      ['POST', '/api/receipts'],
      ['GET', '/api/receipts/some-id'],
      ['GET', '/api/receipts/status?receiptId=x'],
      ['POST', '/api/orders'],
    ] as const) {
      const res = await t.app.inject({ method: 'OPTIONS', url, headers: preflight(CONSOLE, method) });
      assert.equal(res.statusCode, 204, `${method} ${url}`);
      assert.equal(res.headers['access-control-allow-origin'], CONSOLE);
      assert.equal(res.headers['access-control-allow-methods'], method);
      assert.match(String(res.headers['access-control-allow-headers']), /ocp-apim-subscription-key/);
      assert.match(String(res.headers['access-control-allow-headers']), /content-type/);
      assert.equal(res.headers['access-control-allow-credentials'], undefined, 'never credentials');
      assert.match(String(res.headers.vary), /Origin/);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', 'the preflight carries the security headers too');
    }
  });

  test('a preflight from another origin, or to a route that is not a key route, allows nothing', async () => {
    const refused = [
      ['https://evil.example', 'GET', '/api/receipts'],
      ['null', 'GET', '/api/receipts'],
      [CONSOLE, 'DELETE', '/api/receipts'],
      [CONSOLE, 'POST', '/api/receipts/status'],
      [CONSOLE, 'GET', '/api/pay/x'],
      [CONSOLE, 'POST', '/api/auth/login'],
      [CONSOLE, 'GET', '/api/admin/subscriptions'],
      [CONSOLE, 'POST', '/api/shop/config'],
      [CONSOLE, 'GET', '/api/receipts/x/refunds'],
      [CONSOLE, 'GET', '/no/such/route'],
    ] as const;
    for (const [origin, method, url] of refused) {
      const res = await t.app.inject({ method: 'OPTIONS', url, headers: preflight(origin, method) });
      assertNoCors(res.headers, `${origin} ${method} ${url}`);
    }
  });

  test('answers of key routes let the listed origin read them, refusals included', async () => {
    const ok = await t.app.inject({ url: '/api/receipts', headers: { origin: CONSOLE, 'ocp-apim-subscription-key': key } });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.headers['access-control-allow-origin'], CONSOLE);
    assert.match(String(ok.headers['access-control-expose-headers']), /x-correlation-id/);
    assert.match(String(ok.headers['access-control-expose-headers']), /x-ratelimit-remaining/);
    assert.equal(ok.headers['access-control-allow-credentials'], undefined);
    assert.match(String(ok.headers.vary), /Origin/);
    const refused = await t.app.inject({ url: '/api/receipts', headers: { origin: CONSOLE } });
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.headers['access-control-allow-origin'], CONSOLE, 'the console can show why');
  });

  test('other origins, and routes that are not key routes, get no CORS header', async () => {
    const other = await t.app.inject({ url: '/api/receipts', headers: { origin: 'https://evil.example', 'ocp-apim-subscription-key': key } });
    assert.equal(other.statusCode, 200);
    assertNoCors(other.headers, 'other origin');
    assert.match(String(other.headers.vary), /Origin/, 'caches keep the answers per origin apart');
    const s = await signIn(t);
    const sessionRoute = await t.app.inject({ url: '/api/auth/me', headers: { origin: CONSOLE, cookie: s.cookie } });
    assert.equal(sessionRoute.statusCode, 200);
    assertNoCors(sessionRoute.headers, '/api/auth/me');
    const pay = await t.app.inject({ url: '/api/pay/x?t=y', headers: { origin: CONSOLE } });
    assertNoCors(pay.headers, '/api/pay');
  });
});

describe('CORS_ORIGINS configuration', () => {
  test('takes exact origins and refuses anything else', () => {
    assert.deepEqual(loadConfig({}).corsOrigins, []);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://a.example, http://localhost:3000' }).corsOrigins, ['https://a.example', 'http://localhost:3000']);
    for (const bad of ['*', 'https://a.example/', 'https://a.example/path', 'ftp://a.example', 'a.example', 'null']) {
      assert.throws(() => loadConfig({ CORS_ORIGINS: bad }), ConfigError, bad);
    }
  });
});
