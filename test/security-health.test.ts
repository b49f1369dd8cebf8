/**
 * /healthz as a stranger sees it (issue 25): {status} alone, never whether the database is down;
 * the details only with the edge secret or a superadmin session; a budget per address like every
 * credential-free route. And `degraded` when the database is away or the chain worker lags the
 * node's head by more than MAX_LAG_BLOCKS (tests/chain covers the sweeps' part on a dev chain).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startTestApp } from './helpers/app.ts';
import { admin, newAccount, signIn } from './helpers/session.ts';
import { startChainApp, startTestChain } from './chain/helpers.ts';

const SECRET = 'edge-secret-of-the-health-test';

describe('/healthz', () => {
  test('anonymous: {status} only; x-edge-secret or a superadmin session: the details; another session: {status}', async () => {
    const superAccount = newAccount();
    const t = await startTestApp({ EDGE_SECRET: SECRET, SUPERADMIN_WALLETS: superAccount.address });
    try {
      const anonymous = await t.call(null, 'GET', '/healthz');
      assert.equal(anonymous.status, 200, 'load balancers need no secret');
      assert.deepEqual(anonymous.body, { status: 'ok' });
      assert.equal((await t.call(null, 'GET', '/healthz', undefined, { 'x-edge-secret': 'wrong' })).body.database, undefined);
      const edge = await t.call(null, 'GET', '/healthz', undefined, { 'x-edge-secret': SECRET });
      assert.deepEqual(edge.body, { status: 'ok', reasons: [], database: 'up', journalPending: 0 });
      const headers = { 'x-edge-secret': SECRET };
      const merchant = await signInWith(t, newAccount(), headers);
      assert.deepEqual((await t.call(null, 'GET', '/healthz', undefined, { cookie: merchant })).body, { status: 'ok' });
      const sup = await signInWith(t, superAccount, headers);
      assert.equal((await t.call(null, 'GET', '/healthz', undefined, { cookie: sup })).body.database, 'up');
    } finally {
      await t.close();
    }
  });

  test('the database away: a stranger sees degraded, not why; the edge sees why', async () => {
    const t = await startTestApp({ EDGE_SECRET: SECRET });
    try {
      // The database's own ping failing, as when it is unreachable.
      t.deps.database.ping = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
      assert.deepEqual((await t.call(null, 'GET', '/healthz')).body, { status: 'degraded' });
      const edge = await t.call(null, 'GET', '/healthz', undefined, { 'x-edge-secret': SECRET });
      assert.equal(edge.body.status, 'degraded');
      assert.deepEqual(edge.body.reasons, ['database_unavailable']);
      assert.equal(edge.body.database, 'unavailable');
    } finally {
      await t.close();
    }
  });

  test('has a budget per address like the other credential-free routes', async () => {
    const t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push((await t.call(null, 'GET', '/healthz')).status);
      // The window may turn between two requests: at most 3 in one window, and some refused.
      assert.ok(answers.filter((s) => s === 429).length >= 1, answers.join(','));
    } finally {
      await t.close();
    }
  });

  test('degraded when the chain worker lags the node by more than MAX_LAG_BLOCKS', async () => {
    const tc = await startTestChain();
    const superAccount = newAccount();
    const t = await startChainApp(tc.chain, { MAX_LAG_BLOCKS: '5', SUPERADMIN_WALLETS: superAccount.address });
    try {
      const worker = t.deps.chainWorker!;
      await worker.tick();
      const s = await signIn(t, superAccount);
      const fresh = await admin(t, s, 'GET', '/healthz');
      assert.equal(fresh.body.status, 'ok', JSON.stringify(fresh.body));
      assert.equal(fresh.body.payments.lagBlocks, '0');
      // Ten blocks the worker has not read (its loop is not running here).
      await tc.chain.publicClient.request({ method: 'anvil_mine' as never, params: ['0xa'] as never });
      const behind = await waitForHead(async () => (await admin(t, s, 'GET', '/healthz')).body, 10n);
      assert.equal(behind.status, 'degraded');
      assert.deepEqual(behind.reasons, ['chain_lagging']);
      assert.equal((await t.call(null, 'GET', '/healthz')).body.status, 'degraded');
      assert.deepEqual(Object.keys((await t.call(null, 'GET', '/healthz')).body), ['status']);
      await worker.tick();
      const caught = await waitForHead(async () => (await admin(t, s, 'GET', '/healthz')).body, 0n);
      assert.equal(caught.status, 'ok');
    } finally {
      await t.close();
      await tc.close();
    }
  });
});

/** The session cookie of `account`, signed in with `headers` on every request. */
async function signInWith(t: Awaited<ReturnType<typeof startTestApp>>, account: ReturnType<typeof newAccount>, headers: Record<string, string>): Promise<string> {
  const ch = await t.call(null, 'POST', '/api/auth/challenge', { wallet: account.address }, headers);
  const { sign } = await import('./helpers/session.ts');
  const signature = await sign(account, ch.body.typedData);
  const login = await t.call(null, 'POST', '/api/auth/login', { wallet: account.address, nonce: ch.body.nonce, signature }, headers);
  assert.equal(login.status, 200, JSON.stringify(login.body));
  const raw = login.headers['set-cookie'];
  return (Array.isArray(raw) ? raw : [String(raw)]).find((c) => c.startsWith('cb_auth_token='))!.split(';')[0]!;
}

/** The health answer once its lag is `lag` blocks (the node's head is read at most every 2 s). */
async function waitForHead(read: () => Promise<any>, lag: bigint): Promise<any> {
  const { eventually } = await import('./helpers/wait.ts');
  let last: any;
  await eventually(async () => {
    last = await read();
    assert.equal(last.payments.lagBlocks, lag.toString(), JSON.stringify(last));
  }, 10_000, `a lag of ${lag} blocks`);
  return last;
}
