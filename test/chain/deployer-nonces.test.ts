/**
 * One nonce source for the service's deployer (src/chain/deployer.ts, src/chain/nonce-keeper.ts):
 * split deployments, releases and gasless relays take their nonce from the database's keeper, as
 * sweeps do, never from a node's pending count. On the real dev chain behind the simulation's
 * provider proxy (test/sim/proxy.ts) with half its answers from a node 1-3 blocks behind, whose
 * pending count is stale: the old way ("pending" from whichever node answers) failed "nonce too
 * low" or reused a nonce a sweep of another instance had just taken.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createPublicClient, createWalletClient, erc20Abi, getAddress, http, type Hex } from 'viem';
import { devAccount, DEV_DEPLOYER_INDEX } from '../../src/chain/dev-accounts.ts';
import type { ChainDeps, ChainPublicClient, ChainWalletClient } from '../../src/chain/client.ts';
import { Deployer } from '../../src/chain/deployer.ts';
import { release, verifySplitMatches } from '../../src/chain/split-contract.ts';
import { sweepsOf } from '../../src/payments/sweeper.ts';
import { ChainWorker } from '../../src/payments/worker.ts';
import type { TestApp } from '../helpers/app.ts';
import { startProviderProxy, type ProviderProxy } from '../sim/proxy.ts';
import { deployShop, devWallet, PLATFORM, receiptPayTo, startChainApp, startTestChain, testLogger, type Shop, type TestChain } from './helpers.ts';

let tc: TestChain;
let proxy: ProviderProxy;
let t: TestApp;

/** The test chain's deployer as seen through the lagging provider: fresh viem clients, so no in-process queue is shared with another "instance". */
function laggingChain(): ChainDeps {
  const chain = tc.chain.publicClient.chain;
  const publicClient = createPublicClient({ chain, transport: http(proxy.url), pollingInterval: 50 }) as ChainPublicClient;
  const walletClient = createWalletClient({ chain, transport: http(proxy.url), account: devAccount(DEV_DEPLOYER_INDEX) }) as ChainWalletClient;
  return { ...tc.chain, publicClient, walletClient };
}

before(async () => {
  tc = await startTestChain();
  proxy = await startProviderProxy({
    upstream: tc.chain.rpcUrl,
    behaviour: { latencyMs: null, rateLimitPerSecond: null, serverErrorShare: 0, getLogsMaxResults: null, getLogsMaxBlocks: null, lag: { share: 0.5, minBlocks: 1, maxBlocks: 3 } },
  });
  // Instance A: the app, whose split deployments go through the lagging provider.
  t = await startChainApp(laggingChain(), { CONFIRMATIONS: '1', PLATFORM_RECIPIENT_ADDRESS: PLATFORM });
});
after(async () => {
  await t?.close();
  await proxy?.close();
  await tc?.close();
});

const db = () => t.deps.database.db;
const deployerAddress = () => tc.chain.walletClient!.account.address;
const minedNonce = () => tc.chain.publicClient.getTransactionCount({ address: deployerAddress(), blockTag: 'latest' });

/** Instance B: another chain worker on the same database, through its own lagging clients. */
function otherInstance(): ChainWorker {
  return new ChainWorker({ db: db(), chain: laggingChain(), logger: testLogger(), confirmations: 1, platformRecipient: PLATFORM, startBlock: 0n });
}

async function status(sh: Shop, id: string): Promise<string> {
  const res = await t.call(sh.key, 'GET', `/api/receipts/${id}`);
  assert.equal(res.status, 200);
  return res.body.status;
}

describe('a lagging node', () => {
  test('split deployments one after another never take its stale pending nonce', async () => {
    const start = await minedNonce();
    // Each deployment follows one just mined: a lagging node's pending count still says the older nonce.
    for (let i = 0; i < 4; i++) await deployShop(t);
    assert.equal(await minedNonce(), start + 4, 'four deployments, four nonces, none skipped');
  });

  test('a release sent through it with the keeper lands', async () => {
    const sh = await deployShop(t);
    await devWallet(tc, 1).writeContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [sh.split, 2_000_000n], gas: 100_000n });
    const lag = laggingChain();
    const deployer = new Deployer(lag.walletClient!, lag.publicClient, { db: db(), logger: testLogger() });
    for (let i = 0; i < 2; i++) {
      // Twice in a row: the second follows the first as the deployments above did.
      const account = i === 0 ? sh.wallet : PLATFORM;
      const out = await release({ walletClient: lag.walletClient!, publicClient: lag.publicClient, split: sh.split, token: tc.chain.usdc.address, account, deployer });
      assert.equal(out.amount, i === 0 ? 1_990_000n : 10_000n);
    }
  });
});

describe('two instances sharing one database', () => {
  test('split deployments on one racing sweeps on the other never reuse a nonce, and all land', async () => {
    const sh = await deployShop(t);
    const ids = ['race-1', 'race-2', 'race-3'];
    const payTos: Hex[] = [];
    for (const [i, id] of ids.entries()) {
      const payTo = await receiptPayTo(t, sh, id, i + 1);
      payTos.push(payTo);
      await devWallet(tc, 2).writeContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'transfer', args: [payTo, BigInt(i + 1) * 1_000_000n], gas: 100_000n });
    }
    const start = await minedNonce();
    const b = otherInstance();
    const sweeping = (async () => {
      for (let i = 0; i < 200; i++) {
        await b.pass();
        await b.sweeper.idle();
        if ((await Promise.all(ids.map((id) => status(sh, id)))).every((s) => s === 'completed')) return;
      }
      assert.fail('the receipts never completed');
    })();
    const [shops] = await Promise.all([Promise.all([deployShop(t), deployShop(t), deployShop(t)]), sweeping]);
    for (const s of shops) {
      const match = await verifySplitMatches({ publicClient: tc.chain.publicClient, address: getAddress(s.split), recipients: [{ address: s.wallet, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] });
      assert.equal(match.ok, true, 'each split deployed as asked');
    }
    assert.equal(new Set(shops.map((s) => s.split)).size, 3);
    const rowsNow = async () => (await Promise.all(payTos.map((p) => sweepsOf(db(), p)))).flat();
    // The receipts complete on the transfers into the split; the sweep rows follow on a later pass (the node may lag).
    for (let i = 0; i < 50 && (await rowsNow()).some((r) => r.state === 'pending'); i++) {
      await b.pass();
      await b.sweeper.idle();
    }
    const rows = await rowsNow();
    assert.deepEqual(rows.map((r) => r.state), ['mined', 'mined', 'mined'], 'each address swept once, by a sweep that was mined');
    assert.equal(new Set(rows.map((r) => r.nonce)).size, 3);
    assert.equal(await tc.chain.publicClient.readContract({ address: tc.chain.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [sh.split] }), 6_000_000n);
    assert.equal(await minedNonce(), start + 6, 'three deployments and three sweeps: six nonces, none wasted or reused');
  });
});
