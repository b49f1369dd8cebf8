/**
 * Payouts on the real dev chain (DESIGN.md "Recipients: payouts"): GET /api/split/balances with a
 * key, every error and auth rule; a recipient who never signs in is paid, by anyone's release and
 * by the automatic payouts; automatic payouts run once per interval, and never twice when two
 * instances run at the same moment; their settings' errors and auth rules.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { erc20Abi, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Deployer } from '../../src/chain/deployer.ts';
import { paymentSplitterAbi } from '../../src/chain/split-contract.ts';
import { PayoutWorker } from '../../src/payments/payout-worker.ts';
import { HOUR_MS } from '../../src/payments/payouts.ts';
import { startTestApp } from '../helpers/app.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';
import { devWallet, PLATFORM, testLogger, useChainApp } from './helpers.ts';

const f = useChainApp({ CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });
const SHARES = 10_000n;

const usdc = () => f.tc.chain.usdc.address;
const tokenBalance = (address: Hex) => f.tc.chain.publicClient.readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [address] });

async function mined(hash: Hex): Promise<void> {
  assert.equal((await f.tc.chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');
}

/** A dev account's USDC transfer straight into the split. */
async function pay(split: Hex, amount: bigint): Promise<void> {
  await mined(await devWallet(f.tc, 0).writeContract({ address: usdc(), abi: erc20Abi, functionName: 'transfer', args: [split, amount] }));
}

/** An address nobody ever signed in with, nor holds ETH at: a partner who only gave its address. */
const stranger = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Hex;

interface Shop {
  s: Session;
  key: string;
  split: Hex;
  partners: [Hex, Hex];
}

/** A merchant whose split pays two partners who never sign in (60.01% and 39.49%) and the platform (0.50%). */
async function shop(): Promise<Shop> {
  const s = await signIn(f.t);
  const partners: [Hex, Hex] = [stranger(), stranger()];
  const res = await admin(f.t, s, 'POST', '/api/split/deploy', {
    recipients: [
      { address: partners[0], sharesBps: 6001 },
      { address: partners[1], sharesBps: 3949 },
      { address: PLATFORM, sharesBps: 50 },
    ],
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { s, key: await f.t.key(s.wallet, { scopes: ['split:read'] }), split: res.body.split.address, partners };
}

interface Balance {
  address: string;
  sharesBps: number;
  received: string;
  released: string;
  releasable: string;
}

async function balances(sh: Shop): Promise<{ split: string; token: string; recipients: Balance[] }> {
  const res = await f.t.call(sh.key, 'GET', '/api/split/balances');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

const released = (split: Hex, account: string) =>
  f.tc.chain.publicClient.readContract({ address: split, abi: paymentSplitterAbi, functionName: 'released', args: [usdc(), account as Hex] });

/** A second instance's payout worker: its own deployer (nonce keeper on the same database) and the same chain. */
function otherInstance(leaseTtlMs?: number): PayoutWorker {
  const chain = f.tc.chain;
  const deployer = new Deployer(chain.walletClient!, chain.publicClient, { db: f.t.deps.database.db, logger: testLogger() });
  return new PayoutWorker({ db: f.t.deps.database.db, chain, deployer, logger: testLogger(), leaseTtlMs });
}

describe('GET /api/split/balances', () => {
  test('each recipient: received = released + releasable, read from the contract; a recipient who never signs in is paid by anyone', async () => {
    const sh = await shop();
    const empty = await balances(sh);
    assert.equal(empty.split, sh.split);
    assert.equal(empty.token, usdc().toLowerCase());
    assert.deepEqual(
      empty.recipients.map((r) => [r.address, r.sharesBps, r.received, r.released, r.releasable]),
      [
        [sh.partners[0], 6001, '0', '0', '0'],
        [sh.partners[1], 3949, '0', '0', '0'],
        [PLATFORM, 50, '0', '0', '0'],
      ],
    );

    const gross = 1_234_567n;
    await pay(sh.split, gross);
    const due = (bps: bigint) => (gross * bps) / SHARES;
    const before = await balances(sh);
    assert.deepEqual(
      before.recipients.map((r) => [r.received, r.released, r.releasable]),
      [6001n, 3949n, 50n].map((bps) => [due(bps).toString(), '0', due(bps).toString()]),
    );

    // The merchant's own wallet (any wallet) pays the first partner out; the partner sent nothing and signed nothing.
    const merchantWallet = devWallet(f.tc, 2);
    await mined(await merchantWallet.writeContract({ address: sh.split, abi: paymentSplitterAbi, functionName: 'release', args: [usdc(), sh.partners[0]] }));
    assert.equal(await tokenBalance(sh.partners[0]), due(6001n), 'the partner holds exactly its share');
    const after = await balances(sh);
    assert.deepEqual(after.recipients[0], { address: sh.partners[0], sharesBps: 6001, received: due(6001n).toString(), released: due(6001n).toString(), releasable: '0' });
    assert.equal(after.recipients[1]!.releasable, due(3949n).toString(), 'the others are untouched');
  });

  test('401 without a key or with a bad one; 403 forbidden without split:read; 404 not_found before a split; 503 chain_unavailable without a chain', async () => {
    const none = await f.t.call(null, 'GET', '/api/split/balances');
    assert.equal(none.status, 401);
    assert.equal(none.body.error, 'unauthorized');
    const bad = await f.t.call('not-a-key', 'GET', '/api/split/balances');
    assert.equal(bad.status, 401);

    const s = await signIn(f.t);
    const receiptsOnly = await f.t.key(s.wallet, { scopes: ['receipts:read'] });
    const scope = await f.t.call(receiptsOnly, 'GET', '/api/split/balances');
    assert.equal(scope.status, 403, JSON.stringify(scope.body));
    assert.equal(scope.body.error, 'forbidden');
    assert.match(scope.body.message, /split:read/);

    const key = await f.t.key(s.wallet, { scopes: ['split:read'] });
    const unconfigured = await f.t.call(key, 'GET', '/api/split/balances');
    assert.equal(unconfigured.status, 404, JSON.stringify(unconfigured.body));
    assert.equal(unconfigured.body.error, 'not_found');
    assert.equal(typeof unconfigured.body.message, 'string');

    const chainless = await startTestApp({ PLATFORM_RECIPIENT_ADDRESS: PLATFORM });
    try {
      const s2 = await signIn(chainless);
      const res = await chainless.call(await chainless.key(s2.wallet), 'GET', '/api/split/balances');
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.equal(res.body.error, 'chain_unavailable');
    } finally {
      await chainless.close();
    }
  });

  test("a key reads its own merchant's split only", async () => {
    const first = await shop();
    const second = await shop();
    await pay(first.split, 2_000_000n);
    const mine = await balances(second);
    assert.equal(mine.split, second.split);
    assert.ok(mine.recipients.every((r) => r.received === '0'));
  });
});

describe('automatic payouts', () => {
  test('settings: 401 without a session, 403 without the CSRF token, 400 invalid_input for each bad value; read back; off', async () => {
    const s = await signIn(f.t);
    const body = { payoutThresholdUsd: 5, payoutIntervalHours: 24 };
    assert.equal((await f.t.call(null, 'PUT', '/api/admin/split/payouts', body)).status, 401);
    assert.equal((await f.t.call(await f.t.key(s.wallet), 'GET', '/api/admin/split/payouts')).status, 401, 'a key is not a session');
    const noCsrf = await admin(f.t, s, 'PUT', '/api/admin/split/payouts', body, { 'x-csrf-token': 'wrong' });
    assert.equal(noCsrf.status, 403, JSON.stringify(noCsrf.body));

    for (const bad of [
      { payoutThresholdUsd: 0, payoutIntervalHours: 24 },
      { payoutThresholdUsd: -1, payoutIntervalHours: 24 },
      { payoutThresholdUsd: 1.005, payoutIntervalHours: 24 },
      { payoutThresholdUsd: 1_000_000.01, payoutIntervalHours: 24 },
      { payoutThresholdUsd: 5, payoutIntervalHours: 0 },
      { payoutThresholdUsd: 5, payoutIntervalHours: 1.5 },
      { payoutThresholdUsd: 5, payoutIntervalHours: 8761 },
      { payoutThresholdUsd: 5 },
      { payoutThresholdUsd: '5', payoutIntervalHours: 24 },
    ]) {
      const res = await admin(f.t, s, 'PUT', '/api/admin/split/payouts', bad);
      assert.equal(res.status, 400, `${JSON.stringify(bad)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'invalid_input');
    }
    assert.deepEqual((await admin(f.t, s, 'GET', '/api/admin/split/payouts')).body, { payouts: null, automatic: true });

    const set = await admin(f.t, s, 'PUT', '/api/admin/split/payouts', { payoutThresholdUsd: 12.5, payoutIntervalHours: 6 });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body, { payouts: { payoutThresholdUsd: 12.5, payoutIntervalHours: 6, lastRunAt: null }, automatic: true });
    assert.deepEqual((await admin(f.t, s, 'GET', '/api/admin/split/payouts')).body, set.body);
    const other = await signIn(f.t);
    assert.deepEqual((await admin(f.t, other, 'GET', '/api/admin/split/payouts')).body.payouts, null, "another merchant's settings are its own");

    const off = await admin(f.t, s, 'DELETE', '/api/admin/split/payouts');
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.deepEqual(off.body, { payouts: null, automatic: true });
  });

  test('recipients who never sign in are paid by the deployer once their share reaches the threshold, once per interval, never twice across two instances', async () => {
    const sh = await shop();
    const set = await admin(f.t, sh.s, 'PUT', '/api/admin/split/payouts', { payoutThresholdUsd: 1, payoutIntervalHours: 1 });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const here = f.t.deps.payoutWorker!;
    const there = otherInstance();
    const t0 = Date.now();

    // Below the threshold for everyone: nothing is released and the interval is not used up.
    await pay(sh.split, 1_500_000n); // partners: 900,150 and 592,350 units; platform 7,500
    assert.deepEqual(await here.pass(t0), []);

    // 3 USDC in all: both partners pass 1 USDC, the platform (0.015 USDC) does not.
    await pay(sh.split, 1_500_000n);
    const gross = 3_000_000n;
    const share = (bps: bigint) => (gross * bps) / SHARES;
    const [a, b] = await Promise.all([here.pass(t0 + 1000), there.pass(t0 + 1000)]);
    const paid = [...a, ...b];
    assert.deepEqual(
      paid.map((p) => [p.account, p.amount]).sort(),
      [
        [sh.partners[0], share(6001n)],
        [sh.partners[1], share(3949n)],
      ].sort(),
      'one instance paid each partner once',
    );
    assert.ok(a.length === 0 || b.length === 0, 'only one instance ran');
    assert.equal(await tokenBalance(sh.partners[0]), share(6001n));
    assert.equal(await tokenBalance(sh.partners[1]), share(3949n));
    assert.equal(await released(sh.split, PLATFORM), 0n, 'the platform is below the threshold');
    const lastRunAt = (await admin(f.t, sh.s, 'GET', '/api/admin/split/payouts')).body.payouts.lastRunAt;
    assert.equal(lastRunAt, t0 + 1000);

    // More money within the interval: nothing, on either instance.
    await pay(sh.split, 4_000_000n);
    assert.deepEqual([...(await here.pass(t0 + HOUR_MS)), ...(await there.pass(t0 + HOUR_MS))], []);
    assert.equal(await released(sh.split, sh.partners[0]), share(6001n));

    // One interval after the run: paid again, once.
    const total = gross + 4_000_000n;
    const [c, d] = await Promise.all([there.pass(t0 + 1000 + HOUR_MS), here.pass(t0 + 1000 + HOUR_MS)]);
    assert.equal(c.length + d.length, 2, 'both partners once; the platform (0.035 USDC) is still below 1 USDC');
    assert.ok(c.length === 0 || d.length === 0, 'only one instance ran');
    assert.equal(await tokenBalance(sh.partners[0]), (total * 6001n) / SHARES);
    assert.equal(await tokenBalance(sh.partners[1]), (total * 3949n) / SHARES);
    assert.equal(await released(sh.split, PLATFORM), 0n);
  });

  test('the loop runs on the instance holding the payouts lease only', async () => {
    const sh = await shop();
    assert.equal((await admin(f.t, sh.s, 'PUT', '/api/admin/split/payouts', { payoutThresholdUsd: 0.5, payoutIntervalHours: 1 })).status, 200);
    await pay(sh.split, 2_000_000n);
    // A lease longer than the interval, so the standby's tick an interval later still finds it held.
    const leader = otherInstance(3 * HOUR_MS);
    const standby = otherInstance(3 * HOUR_MS);
    const now = Date.now();
    await leader.tick(now);
    assert.equal(await released(sh.split, sh.partners[0]), (2_000_000n * 6001n) / SHARES, 'the leader paid');
    await pay(sh.split, 2_000_000n);
    // The standby does not hold the lease: even an interval later it sends nothing.
    await standby.tick(now + HOUR_MS + 1);
    assert.equal(await released(sh.split, sh.partners[0]), (2_000_000n * 6001n) / SHARES, 'the standby paid nothing');
    await leader.stop();
    await standby.stop();
  });
});
