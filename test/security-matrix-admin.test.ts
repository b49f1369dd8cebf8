/**
 * One security matrix for every admin operation the app registers (`auth: 'session'`), generated
 * from the registration, so a new admin route is in it: a subscription key, no credential and a
 * forged cookie are 401; a state-changing call with the session but without its x-csrf-token, or
 * from a foreign Origin, is 403; a route that needs a role refuses a session without it; a
 * superadmin's session with its token is let through. The URL to call is the one thing kept by
 * hand (ADMIN_URLS); a registered admin route without it fails the first test.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomWallet, startTestApp, type Res } from './helpers/app.ts';
import { ADMIN_URLS, adminOperations, adminRoutes, type AdminRoute } from './helpers/admin-routes.ts';
import { registeredRoutes } from './helpers/routes.ts';
import { newAccount, signIn, type Session } from './helpers/session.ts';

const SITE = 'http://pay.test';
const superAccount = newAccount();
// Built while the file loads: the matrix's tests are made from the routes it registered.
const t = await startTestApp({ SUPERADMIN_WALLETS: superAccount.address, WEBHOOK_ALLOW_PRIVATE: 'false' });
const registered = registeredRoutes(t.app);

/** A signed-in wallet with no role beyond owner. */
let plain: Session;
before(async () => {
  plain = await signIn(t);
});
after(async () => {
  await t.close();
});

/** Calls `r` as `wallet` would (the session's wallet; a random one otherwise). */
function send(r: AdminRoute, key: string | null, headers: Record<string, string> = {}, wallet = plain.wallet): Promise<Res> {
  return t.call(key, r.method, r.url, r.body(wallet), headers);
}

function assertRefused(res: Res, status: 401 | 403, code: string): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  assert.equal(res.body.error, code);
  assert.equal(typeof res.body.message, 'string');
  assert.ok(res.headers['x-correlation-id'], 'refusals carry a correlation id');
}

const writes = (r: AdminRoute) => r.method !== 'GET';

interface Case {
  name: (r: AdminRoute) => string;
  applies: (r: AdminRoute) => boolean;
  run: (r: AdminRoute) => Promise<void>;
}

const CASES: Case[] = [
  {
    name: () => 'a subscription key is 401 unauthorized',
    applies: () => true,
    run: async (r) => assertRefused(await send(r, await t.key(randomWallet())), 401, 'unauthorized'),
  },
  {
    name: () => 'no credential is 401 unauthorized',
    applies: () => true,
    run: async (r) => assertRefused(await send(r, null, { origin: SITE }), 401, 'unauthorized'),
  },
  {
    name: () => 'a forged session cookie is 401 unauthorized',
    applies: () => true,
    run: async (r) => assertRefused(await send(r, null, { cookie: 'cb_auth_token=forged.session.token', 'x-csrf-token': 'forged', origin: SITE }), 401, 'unauthorized'),
  },
  {
    name: () => 'HEAD without a session is 401',
    applies: (r) => r.method === 'GET',
    run: async (r) => assert.equal((await t.app.inject({ method: 'HEAD', url: r.url })).statusCode, 401),
  },
  {
    name: () => 'the session without its x-csrf-token is 403 forbidden',
    applies: writes,
    run: async (r) => assertRefused(await send(r, null, { cookie: plain.cookie, origin: SITE }), 403, 'forbidden'),
  },
  {
    name: () => "another session's x-csrf-token is 403 forbidden",
    applies: writes,
    run: async (r) => {
      const other = await signIn(t);
      assertRefused(await send(r, null, { cookie: plain.cookie, 'x-csrf-token': other.csrfToken, origin: SITE }), 403, 'forbidden');
    },
  },
  {
    name: () => 'a foreign Origin is 403 forbidden',
    applies: writes,
    run: async (r) => assertRefused(await send(r, null, { cookie: plain.cookie, 'x-csrf-token': plain.csrfToken, origin: 'https://evil.example' }), 403, 'forbidden'),
  },
  {
    name: (r) => `a session without the ${r.role} role is 403 forbidden`,
    applies: (r) => r.role !== undefined,
    run: async (r) => {
      const res = await send(r, null, { cookie: plain.cookie, 'x-csrf-token': plain.csrfToken, origin: SITE });
      assertRefused(res, 403, 'forbidden');
      assert.match(res.body.message, new RegExp(String(r.role)), 'the message names the missing role');
    },
  },
  {
    name: () => "a superadmin's session with its x-csrf-token is let through",
    applies: () => true,
    run: async (r) => {
      // A session of its own: the matrix signs out and changes roles.
      const s = await signIn(t, superAccount);
      const res = await send(r, null, { cookie: s.cookie, 'x-csrf-token': s.csrfToken, origin: SITE }, s.wallet);
      assert.notEqual(res.status, 401, JSON.stringify(res.body));
      assert.ok(!(res.status === 403 && res.body.error === 'forbidden'), JSON.stringify(res.body));
    },
  },
];

test('every registered admin route has a URL in ADMIN_URLS, and every URL a route', () => {
  const operations = adminOperations(registered).map((r) => `${r.method} ${r.path}`);
  assert.ok(operations.length >= 30, `only ${operations.length} admin routes registered`);
  assert.deepEqual(operations.filter((o) => ADMIN_URLS[o] === undefined), [], 'registered admin routes the matrix cannot call');
  assert.deepEqual(Object.keys(ADMIN_URLS).filter((o) => !operations.includes(o)), [], 'URLs for routes that are not registered with the session');
});

for (const route of adminRoutes(registered, t.app.swagger())) {
  describe(`${route.method} ${route.path}`, () => {
    for (const c of CASES) {
      if (c.applies(route)) test(c.name(route), () => c.run(route));
    }
  });
}
