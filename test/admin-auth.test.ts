import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { loadJwtKey } from '../src/auth/secret.ts';
import { randomWallet, type TestApp, useTestApp } from './helpers/app.ts';
import { admin, challenge, cookieFrom, newAccount, sign, signIn } from './helpers/session.ts';

let t: TestApp;
const superAccount = newAccount();
useTestApp({ SUPERADMIN_WALLETS: superAccount.address }, (app) => (t = app));

describe('wallet sign-in', () => {
  test('challenge gives a complete EIP-712 payload; login sets an HttpOnly SameSite cookie', async () => {
    const account = newAccount();
    const { nonce, typedData } = await challenge(t, account.address);
    assert.match(nonce, /^[0-9a-f]{32}$/);
    assert.equal(typedData.primaryType, 'Login');
    assert.ok(typedData.types.EIP712Domain);
    assert.equal(typedData.domain.chainId, 31337);
    assert.equal(typedData.message.nonce, nonce);
    const signature = await sign(account, typedData);
    const res = await t.call(null, 'POST', '/api/auth/login', { wallet: account.address, nonce, signature });
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, true);
    assert.equal(res.body.wallet, account.address.toLowerCase());
    assert.deepEqual(res.body.roles, ['owner']);
    assert.equal(typeof res.body.csrfToken, 'string');
    const setCookie = String(res.headers['set-cookie']);
    assert.match(setCookie, /cb_auth_token=/);
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Lax/);
    assert.match(setCookie, /Path=\//);
    assert.doesNotMatch(setCookie, /Secure/, 'no Secure flag over plain http');
    const me = await t.call(null, 'GET', '/api/auth/me', undefined, { cookie: cookieFrom(res) });
    assert.equal(me.status, 200);
    assert.equal(me.body.wallet, account.address.toLowerCase());
    assert.equal(me.body.csrfToken, res.body.csrfToken);
  });

  test('superadmins from SUPERADMIN_WALLETS get the platform roles', async () => {
    const s = await signIn(t, superAccount);
    assert.deepEqual(s.roles, ['owner', 'admin', 'superadmin']);
  });

  test('a replayed nonce is refused', async () => {
    const account = newAccount();
    const { nonce, typedData } = await challenge(t, account.address);
    const signature = await sign(account, typedData);
    assert.equal((await t.call(null, 'POST', '/api/auth/login', { wallet: account.address, nonce, signature })).status, 200);
    const replay = await t.call(null, 'POST', '/api/auth/login', { wallet: account.address, nonce, signature });
    assert.equal(replay.status, 401);
    assert.equal(replay.body.error, 'unauthorized');
  });

  test('an expired nonce is refused', async () => {
    const account = newAccount();
    const old = await t.deps.auth.challenge(account.address, Date.now() - 6 * 60_000);
    const { EIP712Domain: _d, ...types } = old.typedData.types;
    const signature = await account.signTypedData({ ...old.typedData, types });
    const res = await t.call(null, 'POST', '/api/auth/login', { wallet: account.address, nonce: old.nonce, signature });
    assert.equal(res.status, 401);
  });

  test("a signature by another wallet is refused, and a challenge can't be used by another wallet", async () => {
    const victim = newAccount();
    const attacker = newAccount();
    const { nonce, typedData } = await challenge(t, victim.address);
    const forged = await sign(attacker, typedData);
    const res = await t.call(null, 'POST', '/api/auth/login', { wallet: victim.address, nonce, signature: forged });
    assert.equal(res.status, 401);
    const other = await challenge(t, victim.address);
    const asAttacker = await t.call(null, 'POST', '/api/auth/login', {
      wallet: attacker.address,
      nonce: other.nonce,
      signature: await sign(attacker, other.typedData),
    });
    assert.equal(asAttacker.status, 401);
  });

  test('bad challenge input is 400', async () => {
    const res = await t.call(null, 'POST', '/api/auth/challenge', { wallet: 'nope' });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, 'invalid_wallet');
  });
});

describe('session tokens', () => {
  test('a missing cookie is 401; a tampered, expired or foreign-signed JWT is 401', async () => {
    const s = await signIn(t);
    assert.equal((await t.call(null, 'GET', '/api/auth/me')).status, 401);
    const token = s.cookie.slice('cb_auth_token='.length);
    const [h, p, sig] = token.split('.');
    const payload = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: randomWallet() })).toString('base64url')}.${sig}`;
    const key = loadJwtKey(t.config);
    const expired = await new SignJWT({ sid: payload.sid })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(payload.sub)
      .setIssuer('splitline')
      .setAudience('splitline-admin')
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(key);
    const foreign = await new SignJWT({ sid: payload.sid })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(payload.sub)
      .setIssuer('splitline')
      .setAudience('splitline-admin')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('not-the-server-secret-not-the-server-secret'));
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${p}.`;
    for (const [name, bad] of [
      ['tampered', tampered],
      ['expired', expired],
      ['foreign-signed', foreign],
      ['alg none', unsigned],
    ] as const) {
      const res = await t.call(null, 'GET', '/api/auth/me', undefined, { cookie: `cb_auth_token=${bad}` });
      assert.equal(res.status, 401, name);
      assert.equal(res.body.error, 'unauthorized', name);
    }
  });

  test('logout ends the session on the server', async () => {
    const s = await signIn(t);
    const out = await admin(t, s, 'POST', '/api/auth/logout');
    assert.equal(out.status, 200);
    const after = await t.call(null, 'GET', '/api/auth/me', undefined, { cookie: s.cookie });
    assert.equal(after.status, 401);
  });
});

describe('CSRF and Origin', () => {
  const body = { processingFeePct: 1 };
  test('a missing or wrong x-csrf-token is 403', async () => {
    const s = await signIn(t);
    const missing = await t.call(null, 'POST', '/api/shop/config', body, { cookie: s.cookie });
    assert.equal(missing.status, 403);
    assert.equal(missing.body.error, 'forbidden');
    const wrong = await t.call(null, 'POST', '/api/shop/config', body, { cookie: s.cookie, 'x-csrf-token': 'x' + s.csrfToken });
    assert.equal(wrong.status, 403);
    const other = await signIn(t);
    const crossed = await t.call(null, 'POST', '/api/shop/config', body, { cookie: s.cookie, 'x-csrf-token': other.csrfToken });
    assert.equal(crossed.status, 403, "another session's token does not fit");
  });

  test('a foreign Origin is 403; the site origin passes', async () => {
    const s = await signIn(t);
    const foreign = await admin(t, s, 'POST', '/api/shop/config', body, { origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    const ok = await admin(t, s, 'POST', '/api/shop/config', body);
    assert.equal(ok.status, 200);
  });

  test('GET needs no CSRF token', async () => {
    const s = await signIn(t);
    assert.equal((await t.call(null, 'GET', '/api/auth/me', undefined, { cookie: s.cookie })).status, 200);
  });
});

describe('roles', () => {
  test('a non-admin cannot grant roles; a superadmin can', async () => {
    const plain = await signIn(t);
    const target = newAccount();
    const refused = await admin(t, plain, 'POST', '/api/admin/roles', { wallet: target.address, role: 'admin' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'forbidden');
    const sup = await signIn(t, superAccount);
    const granted = await admin(t, sup, 'POST', '/api/admin/roles', { wallet: target.address, role: 'admin' });
    assert.equal(granted.status, 200);
    const s = await signIn(t, target);
    assert.deepEqual(s.roles, ['owner', 'admin']);
    const list = await admin(t, sup, 'GET', '/api/admin/roles');
    assert.ok(list.body.grants.some((g: { wallet: string }) => g.wallet === target.address.toLowerCase()));
    const withdrawn = await admin(t, sup, 'DELETE', `/api/admin/roles/${target.address}/admin`);
    assert.equal(withdrawn.status, 200);
    const again = await t.call(null, 'GET', '/api/auth/me', undefined, { cookie: s.cookie });
    assert.deepEqual(again.body.roles, ['owner']);
  });
});
