/**
 * Sign-in challenges and sessions that can never be used again are purged on a schedule: every
 * unauthenticated POST /api/auth/challenge writes a row, which used to stay for good. The purge
 * also drops the split-deployment counters of past days. Its timer starts with the workers and
 * stops on close.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eq, inArray } from 'drizzle-orm';
import { pino } from 'pino';
import { Purger } from '../src/auth/purge.ts';
import { NONCE_TTL_MS, SESSION_TTL_MS } from '../src/auth/sessions.ts';
import { authNonces, sessions, usageCounters } from '../src/db/schema.ts';
import { randomWallet, startTestApp, type TestApp, useTestApp } from './helpers/app.ts';
import { newAccount, signIn } from './helpers/session.ts';
import { sleep, until } from './helpers/wait.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const HOUR = 3_600_000;

/** Challenges: one expired, one used, one still open; their nonces. */
async function challenges(now: number) {
  const auth = t.deps.auth;
  const expired = (await auth.challenge(randomWallet(), now - NONCE_TTL_MS - 1)).nonce;
  const open = (await auth.challenge(randomWallet(), now)).nonce;
  const used = (await auth.challenge(randomWallet(), now)).nonce;
  await t.deps.database.db.update(authNonces).set({ usedAt: now }).where(eq(authNonces.nonce, used));
  return { expired, open, used };
}

const nonceExists = async (nonce: string) =>
  (await t.deps.database.db.select().from(authNonces).where(eq(authNonces.nonce, nonce))).length > 0;
const sessionExists = async (id: string) => (await t.deps.database.db.select().from(sessions).where(eq(sessions.id, id))).length > 0;

describe('AuthService.purgeExpired', () => {
  test('deletes used and expired challenges and ended or expired sessions, and nothing still usable', async () => {
    const now = Date.now();
    const db = t.deps.database.db;
    const c = await challenges(now);
    const live = await signIn(t);
    const loggedOut = await signIn(t);
    const [out] = await db.select().from(sessions).where(eq(sessions.wallet, loggedOut.wallet));
    await t.deps.auth.logout(out!.id, now);
    const stale = 'expired-session-' + Date.now();
    await db.insert(sessions).values({ id: stale, wallet: randomWallet(), createdAt: now - SESSION_TTL_MS - HOUR, expiresAt: now - HOUR });

    const purged = await t.deps.auth.purgeExpired(now);
    assert.ok(purged.nonces >= 2 + 2, `two challenges here and the two used by the sign-ins: ${JSON.stringify(purged)}`);
    assert.ok(purged.sessions >= 2, JSON.stringify(purged));
    assert.equal(await nonceExists(c.expired), false);
    assert.equal(await nonceExists(c.used), false);
    assert.equal(await nonceExists(c.open), true, 'an open challenge can still be signed');
    assert.equal(await sessionExists(out!.id), false);
    assert.equal(await sessionExists(stale), false);
    const me = await t.call(null, 'GET', '/api/auth/me', undefined, { cookie: live.cookie });
    assert.equal(me.status, 200, 'a live session survives the purge');
  });

  test('works through more rows than one batch', async () => {
    const past = Date.now() - 2 * NONCE_TTL_MS;
    const wallet = randomWallet();
    await t.deps.database.db.insert(authNonces).values(
      Array.from({ length: 250 }, (_, i) => ({ nonce: `bulk-${past}-${i}`, wallet, issuedAt: past, expiresAt: past + NONCE_TTL_MS })),
    );
    const purged = await t.deps.auth.purgeExpired(Date.now(), 40);
    assert.ok(purged.nonces >= 250, JSON.stringify(purged));
    const left = await t.deps.database.db.select().from(authNonces).where(eq(authNonces.wallet, wallet));
    assert.equal(left.length, 0);
  });

  test('a purged challenge cannot be used to sign in', async () => {
    const account = newAccount();
    const { nonce } = await t.deps.auth.challenge(account.address, Date.now() - NONCE_TTL_MS - 1);
    await t.deps.auth.purgeExpired();
    const res = await t.call(null, 'POST', '/api/auth/login', { wallet: account.address, nonce, signature: '0x00' });
    assert.equal(res.status, 401);
  });
});

describe('the schedule', () => {
  test('a pass at start and then every interval; none after stop()', async () => {
    const logger = pino({ level: 'silent' });
    const purger = new Purger({ db: t.deps.database.db, auth: t.deps.auth, claims: t.deps.stores.claims, logger, intervalMs: 50 });
    const first = await challenges(Date.now());
    purger.start();
    await until(async () => !(await nonceExists(first.expired)), 10_000, 'the first pass');
    const second = await challenges(Date.now());
    await until(async () => !(await nonceExists(second.expired)) && !(await nonceExists(second.used)), 10_000, 'a later pass');
    assert.equal(await nonceExists(second.open), true);
    await purger.stop();
    const third = await challenges(Date.now());
    // Proving absence, not a wait: five intervals go by and no pass comes.
    await sleep(250);
    assert.equal(await nonceExists(third.expired), true, 'no pass after stop()');
  });

  test('startWorkers() starts it and close() stops it; past days of deployment counters go too', async () => {
    const app = await startTestApp();
    try {
      const db = app.deps.database.db;
      const now = Date.now();
      const wallet = randomWallet();
      const expired = (await app.deps.auth.challenge(wallet, now - NONCE_TTL_MS - 1)).nonce;
      const day = (ms: number) => `split_deploys:${new Date(ms).toISOString().slice(0, 10)}`;
      await db.insert(usageCounters).values([
        { wallet, name: day(now - 24 * HOUR), n: 3 },
        { wallet, name: day(now), n: 1 },
        { wallet, name: 'subscriptions', n: 2 },
      ]);
      app.deps.startWorkers();
      await until(async () => (await db.select().from(authNonces).where(eq(authNonces.nonce, expired))).length === 0, 10_000, 'the purge at start');
      await until(async () => (await db.select().from(usageCounters).where(eq(usageCounters.wallet, wallet))).length === 2, 10_000, 'the counters purge');
      const left = await db.select({ name: usageCounters.name }).from(usageCounters).where(inArray(usageCounters.wallet, [wallet]));
      assert.deepEqual(left.map((r) => r.name).sort(), [day(now), 'subscriptions'].sort());
    } finally {
      await app.close();
    }
  });
});
