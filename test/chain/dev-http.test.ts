/**
 * The HTTP app on the real dev chain: /dev/rpc and /dev/chain, and the admin's split set-up
 * deploying or checking PaymentSplitter contracts on chain.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { encodeFunctionData, erc20Abi, getAddress, parseEther, type Hex } from 'viem';
import { devAccount, DEV_DEPLOYER_INDEX } from '../../src/chain/dev-accounts.ts';
import { eq } from 'drizzle-orm';
import type { ChainDeps } from '../../src/chain/client.ts';
import { redeployMissingDevSplits } from '../../src/payments/dev-reconcile.ts';
import { deploySplit, verifySplitMatches } from '../../src/chain/split-contract.ts';
import { splitConfigs } from '../../src/db/schema.ts';
import { randomWallet, startTestApp, type TestApp } from '../helpers/app.ts';
import { admin, signIn } from '../helpers/session.ts';
import { CHAIN_WAIT_MS, PLATFORM, testLogger, useChainApp, type TestChain } from './helpers.ts';
import { waitFor } from '../helpers/wait.ts';

let tc: TestChain;
let chain: ChainDeps;
let t: TestApp;
useChainApp(
  {},
  {
    started: (s) => {
      ({ tc, t } = s);
      chain = tc.chain;
    },
  },
);

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

  test('both refuse a query parameter they do not declare, naming it (test/unknown-query.test.ts walks the others)', async () => {
    for (const res of [
      await t.call(null, 'POST', '/dev/rpc?apikey=1', { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }, { 'content-type': 'application/json' }),
      await t.call(null, 'GET', '/dev/chain?apikey=1'),
    ]) {
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.deepEqual(res.body, { error: 'invalid_input', message: 'Unknown query parameter "apikey": this operation takes no query parameter' });
    }
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

describe('POST /dev/rpc passes an explicit list of methods', () => {
  const call = async (method: string, params: unknown[] = [], id: number | string = 1) =>
    (await rpc({ jsonrpc: '2.0', id, method, params })).body as { id: unknown; result?: any; error?: { code: number; message: string } };
  const usdcBalance = async (owner: string) =>
    BigInt(
      (await call('eth_call', [
        { to: chain.usdc.address, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [owner as Hex] }) },
        'latest',
      ])).result,
    );
  const transferCall = (from: string) => ({
    from,
    to: chain.usdc.address,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [randomWallet() as Hex, 1_000_000n] }),
  });

  test('nothing sends as an account without its signature: each refusal is a JSON-RPC error naming the method', async () => {
    const victim = chain.dev!.accounts[0]!;
    const before = await usdcBalance(victim);
    const refused: [string, unknown[]][] = [
      ['eth_sendTransaction', [transferCall(victim)]],
      ['eth_sendUnsignedTransaction', [transferCall(victim)]],
      ['eth_sign', [victim, '0xdeadbeef']],
      ['eth_signTransaction', [transferCall(victim)]],
      ['eth_signTypedData_v4', [victim, '{}']],
      ['personal_sign', ['0xdeadbeef', victim]],
      ['personal_unlockAccount', [victim, '', 0]],
      ['anvil_impersonateAccount', [victim]],
      ['anvil_autoImpersonateAccount', [true]],
      ['anvil_setCode', [victim, '0x00']],
      ['anvil_setStorageAt', [chain.usdc.address, '0x0', '0x' + '00'.repeat(32)]],
      ['anvil_reset', []],
      ['evm_revert', ['0x1']],
      ['evm_snapshot', []],
      ['evm_increaseTime', [3600]],
      ['debug_traceTransaction', ['0x' + '00'.repeat(32)]],
      ['eth_', []],
    ];
    for (const [method, params] of refused) {
      const answer = await call(method, params, method);
      assert.equal(answer.result, undefined, method);
      assert.equal(answer.id, method);
      assert.equal(answer.error?.code, -32601, method);
      assert.ok(answer.error?.message.startsWith(`${method} is not available through /dev/rpc`), answer.error?.message);
    }
    // The same in a batch: each refused call answers for itself, the allowed ones pass.
    const batch = await rpc([
      { jsonrpc: '2.0', id: 1, method: 'eth_sendUnsignedTransaction', params: [transferCall(victim)] },
      { jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] },
      { jsonrpc: '2.0', id: 3, method: 'eth_sendTransaction', params: [transferCall(victim)] },
    ]);
    assert.equal(batch.status, 200);
    const byId = new Map((batch.body as { id: number }[]).map((r) => [r.id, r as Record<string, any>]));
    assert.match(byId.get(1)?.error?.message, /^eth_sendUnsignedTransaction is not available/);
    assert.equal(byId.get(2)?.result, '0x7a69');
    assert.match(byId.get(3)?.error?.message, /^eth_sendTransaction is not available/);
    assert.equal(await usdcBalance(victim), before, "the victim's test USDC did not move");
  });

  test('a transaction its sender signed passes through eth_sendRawTransaction', async () => {
    const sender = devAccount(3);
    const to = randomWallet();
    const nonce = Number(BigInt((await call('eth_getTransactionCount', [sender.address, 'pending'])).result));
    const gasPrice = BigInt((await call('eth_gasPrice')).result);
    const raw = await sender.signTransaction({
      chainId: 31337,
      type: 'legacy',
      nonce,
      gas: 100_000n,
      gasPrice: gasPrice * 2n,
      to: chain.usdc.address,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to as Hex, 250_000n] }),
    });
    const sent = await call('eth_sendRawTransaction', [raw]);
    assert.match(String(sent.result), /^0x[0-9a-f]{64}$/, JSON.stringify(sent));
    const receipt = await waitFor(async () => (await call('eth_getTransactionReceipt', [sent.result])).result ?? undefined, CHAIN_WAIT_MS, 'the receipt');
    assert.equal(receipt.status, '0x1');
    assert.equal(await usdcBalance(to), 250_000n);
  });

  test('anvil_mine and evm_mine are bounded and never move the clock', async () => {
    const height = async () => BigInt((await call('eth_blockNumber')).result);
    const start = await height();
    assert.equal((await call('anvil_mine', ['0x5'])).error, undefined);
    assert.equal(await height(), start + 5n);
    assert.equal((await call('evm_mine')).error, undefined);
    assert.equal(await height(), start + 6n);
    for (const [method, params] of [
      ['anvil_mine', ['0x65']],
      ['anvil_mine', [1_000_000_000]],
      ['anvil_mine', ['0xffffffffffffffffffff']],
      ['anvil_mine', [1, 86_400]],
      ['anvil_mine', ['lots']],
      ['evm_mine', [2_000_000_000]],
      ['evm_mine', [{ timestamp: 2_000_000_000 }]],
      ['evm_mine', [{ blocks: 2 }]],
    ] as const) {
      const answer = await call(method, [...params]);
      assert.equal(answer.error?.code, -32602, `${method} ${JSON.stringify(params)}`);
      assert.ok(answer.error?.message.startsWith(`${method} refused`), answer.error?.message);
    }
    assert.equal(await height(), start + 6n, 'nothing refused was mined');
  });

  test("anvil_setBalance gives bounded test ETH to any account but the service's own", async () => {
    const wallet = randomWallet();
    assert.equal((await call('anvil_setBalance', [wallet, `0x${parseEther('5').toString(16)}`])).error, undefined);
    assert.equal(BigInt((await call('eth_getBalance', [wallet, 'latest'])).result), parseEther('5'));
    const service = chain.walletClient!.account.address;
    const before = BigInt((await call('eth_getBalance', [service, 'latest'])).result);
    const drained = await call('anvil_setBalance', [service, '0x0']);
    assert.equal(drained.error?.code, -32602);
    assert.match(drained.error.message, /^anvil_setBalance refused: the service's own account/);
    assert.equal(BigInt((await call('eth_getBalance', [service, 'latest'])).result), before);
    assert.equal((await call('anvil_setBalance', [wallet, `0x${parseEther('10001').toString(16)}`])).error?.code, -32602);
    assert.equal((await call('anvil_setBalance', ['not-an-address', '0x1'])).error?.code, -32602);
  });

  test("nobody drains the service's account through /dev/rpc with the public mnemonic's key, alone or in a batch", async () => {
    // The attacker's run: derive the service's key from the public mnemonic, sign a transfer of
    // nearly all its ETH to themselves, and send it raw through /dev/rpc.
    const service = devAccount(DEV_DEPLOYER_INDEX);
    assert.equal(service.address, chain.walletClient!.account.address, 'the dev service account is the tenth test account');
    const thief = randomWallet();
    const balanceOf = async (a: string) => BigInt((await call('eth_getBalance', [a, 'latest'])).result);
    const nonceOf = async (a: string) => BigInt((await call('eth_getTransactionCount', [a, 'pending'])).result);
    const before = await balanceOf(service.address);
    const nonceBefore = await nonceOf(service.address);
    const gasPrice = BigInt((await call('eth_gasPrice')).result) * 2n;
    const drain = (type: 'legacy' | 'eip1559', nonce: bigint) =>
      service.signTransaction(
        type === 'legacy'
          ? { chainId: 31337, type, nonce: Number(nonce), gas: 21_000n, gasPrice, to: thief as Hex, value: before - 21_000n * gasPrice }
          : { chainId: 31337, type, nonce: Number(nonce), gas: 21_000n, maxFeePerGas: gasPrice, maxPriorityFeePerGas: 1n, to: thief as Hex, value: before / 2n },
      );
    for (const type of ['legacy', 'eip1559'] as const) {
      const answer = await call('eth_sendRawTransaction', [await drain(type, nonceBefore)], type);
      assert.equal(answer.result, undefined, type);
      assert.equal(answer.id, type);
      assert.equal(answer.error?.code, -32602, JSON.stringify(answer));
      assert.match(answer.error.message, /^eth_sendRawTransaction refused: the transaction is signed by the service's own account/);
    }
    // In a batch beside a read: the read passes, the drain does not.
    const batch = await rpc([
      { jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [await drain('legacy', nonceBefore)] },
      { jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] },
    ]);
    const byId = new Map((batch.body as { id: number }[]).map((r) => [r.id, r as Record<string, any>]));
    assert.equal(byId.get(1)?.error?.code, -32602);
    assert.equal(byId.get(2)?.result, '0x7a69');
    // A wrongly encoded transaction is the node's to refuse, in its own words.
    assert.notEqual((await call('eth_sendRawTransaction', ['0x02deadbeef'])).error?.code, undefined);
    await call('evm_mine');
    assert.equal(await balanceOf(thief), 0n, 'the thief got nothing');
    assert.equal(await balanceOf(service.address), before, "the service's ETH did not move");
    assert.equal(await nonceOf(service.address), nonceBefore, "the service's nonces were not spent");
    // And the service still deploys splits.
    const s = await signIn(t);
    const res = await admin(t, s, 'POST', '/api/split/deploy', { recipients: recipientsOf(s.wallet) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test('the /dev routes exist only with CHAIN=dev, even when a dev node is reachable', async () => {
    const other = await startTestApp({ CHAIN: 'base-sepolia', RPC_URL: chain.rpcUrl }, { chain });
    try {
      assert.equal((await other.call(null, 'POST', '/dev/rpc', { jsonrpc: '2.0', id: 1, method: 'eth_chainId' })).status, 404);
      assert.equal((await other.call(null, 'GET', '/dev/chain')).status, 404);
    } finally {
      await other.close();
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

  test('a deployer drained of ETH answers 503 deployer_unfunded, saying what it is, not chain_unavailable', async () => {
    const service = chain.walletClient!.account.address;
    const before = await chain.publicClient.getBalance({ address: service });
    const setBalance = (wei: bigint) => chain.publicClient.request({ method: 'anvil_setBalance' as never, params: [service, `0x${wei.toString(16)}`] as never });
    // What anyone could do with the public mnemonic: send the deployer's ETH away.
    await setBalance(0n);
    try {
      const s = await signIn(t);
      const res = await admin(t, s, 'POST', '/api/split/deploy', { recipients: recipientsOf(s.wallet) });
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.equal(res.body.error, 'deployer_unfunded');
      assert.match(res.body.message, new RegExp(`deployer account ${service}`, 'i'));
    } finally {
      await setBalance(before);
    }
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
