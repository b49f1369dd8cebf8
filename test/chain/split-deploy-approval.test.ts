/**
 * Server-paid split deployments, as the attacker of issue 25 ran them: fresh wallets sign in and
 * ask the server to deploy their splits, on a real chain whose deployer pays the gas, through
 * TRUST_PROXY from one IPv6 /64. Only wallets the platform approved get a deployment the server
 * pays for; the others deploy from their own wallet and pass splitAddress. And no client address
 * (an IPv6 /64) takes more than its share of the day's budget, so the next genuine merchant from
 * elsewhere still gets theirs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ChainDeps } from '../../src/chain/client.ts';
import { deploySplit, verifySplitMatches } from '../../src/chain/split-contract.ts';
import { deploysPerSourcePerDay } from '../../src/domain/split-setup.ts';
import type { Res, TestApp } from '../helpers/app.ts';
import { admin, newAccount, signIn, type Session } from '../helpers/session.ts';
import { devWallet, PLATFORM, useChainApp, type TestChain } from './helpers.ts';

const PER_DAY = 20;
const superAccount = newAccount();
let tc: TestChain;
let chain: ChainDeps;
let t: TestApp;
useChainApp(
  { SPLIT_DEPLOYS_APPROVED_ONLY: 'true', SPLIT_DEPLOYS_PER_DAY: String(PER_DAY), SUPERADMIN_WALLETS: superAccount.address, TRUST_PROXY: '1' },
  {
    started: (s) => {
      ({ tc, t } = s);
      chain = tc.chain;
    },
  },
);

const recipientsOf = (wallet: string) => [
  { address: wallet, sharesBps: 9950 },
  { address: PLATFORM, sharesBps: 50 },
];
/** Deploy without splitAddress, from a client address (through the trusted proxy). */
const deploy = (s: Session, client: string, body: Record<string, unknown> = { recipients: recipientsOf(s.wallet) }) =>
  admin(t, s, 'POST', '/api/split/deploy', body, { 'x-forwarded-for': client });
const deployerNonce = () => chain.publicClient.getTransactionCount({ address: chain.walletClient!.account.address, blockTag: 'pending' });
const tomorrow = () => Date.parse(new Date().toISOString().slice(0, 10)) + 86_400_000;
const approve = async (wallet: string) => {
  const sup = await signIn(t, superAccount);
  const res = await admin(t, sup, 'POST', '/api/admin/roles', { wallet, role: 'merchant' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
};
const statuses = (all: Res[]) => all.map((r) => r.status).join(',');

describe('server-paid split deployments need a reason', () => {
  test('fresh wallets from one /64 asking the server to deploy get 403 forbidden, and the deployer sends nothing', async () => {
    const nonce = await deployerNonce();
    const answers: Res[] = [];
    for (let i = 0; i < 12; i++) answers.push(await deploy(await signIn(t), `2001:db8:bad:1::${(i + 1).toString(16)}`));
    assert.equal(statuses(answers), Array(12).fill(403).join(','));
    for (const res of answers) {
      assert.equal(res.body.error, 'forbidden');
      assert.match(res.body.message, /only for merchants it approved/);
      assert.match(res.body.message, /from your own wallet and send its splitAddress/);
    }
    assert.equal(await deployerNonce(), nonce, 'no deployment was paid for');
    // A self-issued key in use is no reason: it costs a throw-away wallet nothing.
    const s = await signIn(t);
    const key = await admin(t, s, 'POST', '/api/admin/subscriptions', { name: 'mine' });
    assert.equal(key.status, 201);
    assert.equal((await t.call(key.body.primaryKey, 'GET', '/api/split/deploy')).status, 200);
    assert.equal((await deploy(s, '2001:db8:bad:1::99')).status, 403);
  });

  test('a merchant without approval deploys from its own wallet and passes splitAddress', async () => {
    const s = await signIn(t);
    const nonce = await deployerNonce();
    // The merchant's own wallet (a funded dev account standing in for it) pays the gas.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    const own = await deploySplit({ walletClient: devWallet(tc, 4) as never, publicClient: chain.publicClient, recipients: recipientsOf(s.wallet) });
    const res = await deploy(s, '2001:db8:bad:1::77', { splitAddress: own.address, recipients: recipientsOf(s.wallet) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.split.address, own.address.toLowerCase());
    assert.equal(await deployerNonce(), nonce, 'the server paid nothing');
  });

  test('a wallet a superadmin granted the merchant role gets its split deployed by the server; a withdrawn grant ends that', async () => {
    const s = await signIn(t);
    await approve(s.wallet);
    const res = await deploy(s, '2001:db8:900d:1::1');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal((await verifySplitMatches({ publicClient: chain.publicClient, address: res.body.split.address, recipients: recipientsOf(s.wallet) })).ok, true);

    const other = await signIn(t);
    await approve(other.wallet);
    const sup = await signIn(t, superAccount);
    assert.equal((await admin(t, sup, 'DELETE', `/api/admin/roles/${other.wallet}/merchant`)).status, 200);
    assert.equal((await deploy(other, '2001:db8:900d:2::1')).status, 403);
    const grants = (await admin(t, sup, 'GET', '/api/admin/roles')).body.grants as { wallet: string; role: string }[];
    assert.ok(grants.some((g) => g.wallet === s.wallet && g.role === 'merchant'));
    assert.ok(!grants.some((g) => g.wallet === other.wallet));
    // Only a superadmin grants it: a merchant cannot approve itself.
    assert.equal((await admin(t, other, 'POST', '/api/admin/roles', { wallet: other.wallet, role: 'merchant' })).status, 403);
  });

  test(`approved wallets from one /64 take at most ${deploysPerSourcePerDay(PER_DAY)} of the day's ${PER_DAY}; a merchant elsewhere still gets theirs`, async () => {
    const share = deploysPerSourcePerDay(PER_DAY);
    const sessions: Session[] = [];
    for (let i = 0; i < share + 3; i++) {
      const s = await signIn(t);
      await approve(s.wallet);
      sessions.push(s);
    }
    const nonce = await deployerNonce();
    // Concurrently, each from another address of the same /64.
    const answers = await Promise.all(sessions.map((s, i) => deploy(s, `2001:db8:bad:2::${(i + 1).toString(16)}`)));
    assert.equal(answers.filter((r) => r.status === 200).length, share, statuses(answers));
    const refused = answers.filter((r) => r.status === 429);
    assert.equal(refused.length, 3, statuses(answers));
    for (const res of refused) {
      assert.equal(res.body.error, 'rate_limited');
      assert.equal(res.body.resetAt, tomorrow());
      assert.match(res.body.message, /2001:db8:bad:2::\/64\) has used its share/);
      assert.match(res.body.message, /deploy the split from your own wallet and pass splitAddress/);
    }
    assert.equal(await deployerNonce(), nonce + share, 'the server paid for the share alone');
    // Another /64 has its own share.
    const genuine = await signIn(t);
    await approve(genuine.wallet);
    const res = await deploy(genuine, '2001:db8:600d:7::1');
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });
});
