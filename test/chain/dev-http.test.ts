/**
 * The HTTP app on the real dev chain: /dev/rpc and /dev/chain, and the admin's split set-up
 * deploying or checking PaymentSplitter contracts on chain.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { getAddress } from 'viem';
import { eq } from 'drizzle-orm';
import type { ChainDeps } from '../../src/chain/client.ts';
import { redeployMissingDevSplits } from '../../src/chain/dev-reconcile.ts';
import { deploySplit, verifySplitMatches } from '../../src/chain/split-contract.ts';
import { splitConfigs } from '../../src/db/schema.ts';
import { randomWallet, startTestApp, type TestApp } from '../helpers/app.ts';
import { admin, signIn } from '../helpers/session.ts';
import { PLATFORM, startChainApp, startTestChain, testLogger, type TestChain } from './helpers.ts';

let tc: TestChain;
let chain: ChainDeps;
let t: TestApp;
before(async () => {
  tc = await startTestChain();
  chain = tc.chain;
  t = await startChainApp(chain);
});
after(async () => {
  await t.close();
  await tc.close();
});

const rpc = (payload: unknown) => t.call(null, 'POST', '/dev/rpc', payload, { 'content-type': 'application/json' });
const recipientsOf = (wallet: string) => [
  { address: wallet, sharesBps: 9950 },
  { address: PLATFORM, sharesBps: 50 },
];

describe('POST /dev/rpc', () => {
  test('answers eth_chainId with 0x7a69', async () => {
    const res = await rpc({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { jsonrpc: '2.0', id: 1, result: '0x7a69' });
    assert.equal(res.headers['access-control-allow-origin'], '*');
  });

  test('answers a batch, refusing node controls that would rewrite the chain', async () => {
    const res = await rpc([
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
      { jsonrpc: '2.0', id: 2, method: 'eth_getBalance', params: [chain.dev!.accounts[0], 'latest'] },
      { jsonrpc: '2.0', id: 3, method: 'anvil_reset', params: [] },
    ]);
    assert.equal(res.status, 200);
    const byId = new Map((res.body as { id: number }[]).map((r) => [r.id, r as Record<string, any>]));
    assert.equal(byId.size, 3);
    assert.equal(byId.get(1)?.result, '0x7a69');
    assert.ok(BigInt(byId.get(2)?.result) > 0n);
    assert.equal(byId.get(3)?.error?.code, -32601);
  });

  test('refuses what is not JSON-RPC, and bodies over the limit', async () => {
    assert.equal((await rpc({ hello: 'world' })).status, 400);
    assert.equal((await rpc([])).status, 400);
    const huge = { jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ data: '0x' + 'ab'.repeat(600_000) }, 'latest'] };
    assert.equal((await rpc(huge)).status, 413);
  });

  test('GET /dev/chain tells how to connect', async () => {
    const res = await t.call(null, 'GET', '/dev/chain');
    assert.equal(res.status, 200);
    assert.equal(res.body.chainId, 31337);
    assert.equal(res.body.rpcUrl, 'http://pay.test/dev/rpc');
    assert.equal(res.body.usdcAddress, chain.usdc.address);
    assert.equal(res.body.accounts.length, 10);
    assert.equal(res.body.accounts[9], chain.walletClient?.account.address);
  });

  test('neither route exists on an app without the dev chain', async () => {
    const plain = await startTestApp();
    try {
      assert.equal((await plain.call(null, 'POST', '/dev/rpc', { jsonrpc: '2.0', id: 1, method: 'eth_chainId' })).status, 404);
      assert.equal((await plain.call(null, 'GET', '/dev/chain')).status, 404);
    } finally {
      await plain.close();
    }
  });
});

describe('POST /api/split/deploy on the dev chain', () => {
  test('without splitAddress, deploys a PaymentSplitter whose payees and shares are the recipients', async () => {
    const s = await signIn(t);
    const res = await admin(t, s, 'POST', '/api/split/deploy', { recipients: recipientsOf(s.wallet) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const address = res.body.split.address;
    assert.match(address, /^0x[0-9a-f]{40}$/);
    const match = await verifySplitMatches({ publicClient: chain.publicClient, address, recipients: recipientsOf(s.wallet) });
    assert.equal(match.ok, true);
    const again = await admin(t, s, 'POST', '/api/split/deploy', { recipients: recipientsOf(s.wallet) });
    assert.equal(again.body.idempotent, true);
    assert.equal(again.body.split.address, address, 'no second contract');
  });

  test('a pre-deployed contract paying exactly the recipients is accepted', async () => {
    const s = await signIn(t);
    const deployed = await deploySplit({ walletClient: chain.walletClient!, publicClient: chain.publicClient, recipients: recipientsOf(s.wallet) });
    const res = await admin(t, s, 'POST', '/api/split/deploy', { splitAddress: deployed.address, recipients: recipientsOf(s.wallet) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.split.address, deployed.address.toLowerCase());
  });

  test('a pre-deployed contract with other shares, another payee, or no code is refused', async () => {
    const s = await signIn(t);
    const otherShares = await deploySplit({
      walletClient: chain.walletClient!,
      publicClient: chain.publicClient,
      recipients: [
        { address: s.wallet, sharesBps: 9900 },
        { address: PLATFORM, sharesBps: 100 },
      ],
    });
    const otherPayee = await deploySplit({ walletClient: chain.walletClient!, publicClient: chain.publicClient, recipients: recipientsOf(randomWallet()) });
    for (const [splitAddress, reason] of [
      [otherShares.address, 'share_differs'],
      [otherPayee.address, 'payee_missing'],
      [randomWallet(), 'no_code'],
    ] as const) {
      const res = await admin(t, s, 'POST', '/api/split/deploy', { splitAddress, recipients: recipientsOf(s.wallet) });
      assert.equal(res.status, 400, reason);
      assert.equal(res.body.error, 'invalid_input');
      assert.match(res.body.message, new RegExp(reason));
    }
    const key = await t.key(s.wallet);
    assert.equal((await t.call(key, 'GET', '/api/split/deploy')).body.split.address ?? null, null, 'nothing was stored');
  });
});

describe('dev chain and database consistency', () => {
  test('a stored split address without code on the chain is deployed again and the new address stored', async () => {
    const wallet = randomWallet();
    const lost = randomWallet();
    await t.deps.database.db.insert(splitConfigs).values({ wallet, address: lost, recipients: recipientsOf(wallet), createdAt: Date.now() });
    const redeployed = await redeployMissingDevSplits({ db: t.deps.database.db, chain, logger: testLogger() });
    const mine = redeployed.find((r) => r.wallet === wallet);
    assert.ok(mine, 'redeployed');
    assert.equal(mine.previous, lost);
    const [row] = await t.deps.database.db.select().from(splitConfigs).where(eq(splitConfigs.wallet, wallet));
    assert.equal(row?.address, mine.address);
    const match = await verifySplitMatches({ publicClient: chain.publicClient, address: getAddress(mine.address), recipients: recipientsOf(wallet) });
    assert.equal(match.ok, true);
  });
});
