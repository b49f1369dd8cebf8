/**
 * The embedded dev chain on a real anvil: it boots, funds the test accounts with test USDC,
 * keeps its state across a restart, comes back after a crash, and leaves no process behind.
 */
import assert from 'node:assert/strict';
import { writeFileSync, readdirSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createWalletClient, erc20Abi, getAddress, http, type Address } from 'viem';
import { DEV_USDC_PER_ACCOUNT, devAccount } from '../../src/chain/dev-accounts.ts';
import type { ChainDeps } from '../../src/chain/client.ts';
import { testUsdcAbi } from '../../src/chain/test-usdc.ts';
import { processAlive } from '../../src/lib/process-alive.ts';
import { CHAIN_WAIT_MS, startTestChain, tempDataDir, type TestChain } from './helpers.ts';
import { eventually, waitFor } from '../helpers/wait.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function track(t: TestChain): TestChain {
  cleanups.push(() => t.close());
  return t;
}

const balanceOf = (chain: ChainDeps, account: Address) =>
  chain.publicClient.readContract({ address: chain.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [account] });

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('dev chain', () => {
  test('boots on loopback as chain 31337 with test USDC funding the ten accounts, and stops leaving no process', async () => {
    const t = track(await startTestChain());
    const { chain } = t;
    assert.ok(chain.dev, 'the dev chain is described');
    assert.match(chain.rpcUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(await chain.publicClient.getChainId(), 31337);
    assert.equal(chain.chainId, 31337);

    const read = <F extends 'decimals' | 'symbol' | 'name'>(functionName: F) =>
      chain.publicClient.readContract({ address: chain.usdc.address, abi: testUsdcAbi, functionName });
    assert.equal(await read('decimals'), 6);
    assert.equal(await read('symbol'), 'USDC');
    assert.equal(await read('name'), 'USD Coin (test)');
    assert.deepEqual(chain.usdc, { address: chain.usdc.address, decimals: 6, symbol: 'USDC' });

    assert.equal(chain.dev.accounts.length, 10);
    assert.equal(chain.dev.accounts[0], '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266');
    for (const account of chain.dev.accounts) {
      assert.equal(await balanceOf(chain, account), 1_000_000n * 10n ** 6n, `${account} holds 1,000,000 USDC`);
      assert.ok((await chain.publicClient.getBalance({ address: account })) > 0n, `${account} holds test ETH`);
    }
    // The service deploys from the tenth account, so the first nine stay free for buyers.
    assert.equal(chain.walletClient?.account.address, chain.dev.accounts[9]);

    const pid = chain.dev.process?.pid;
    assert.ok(pid !== undefined && processAlive(pid), 'anvil runs');
    await t.stop();
    assert.equal(processAlive(pid), false, 'anvil is gone after stop');
  });

  test('its state survives a restart on the same DATA_DIR', async () => {
    const dataDir = tempDataDir();
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const first = await startTestChain({ dataDir });
    const usdc = first.chain.usdc.address;
    const buyer = devAccount(0);
    const payee = getAddress(`0x${'12'.repeat(20)}`);
    const wallet = createWalletClient({ chain: first.chain.publicClient.chain, transport: http(first.chain.rpcUrl), account: buyer });
    const hash = await wallet.writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [payee, 1_234_567n] });
    await first.chain.publicClient.waitForTransactionReceipt({ hash });
    const height = await first.chain.publicClient.getBlockNumber();
    await first.stop();

    const second = track(await startTestChain({ dataDir }));
    assert.equal(second.chain.dev?.process?.startedFresh, false, 'the state file was loaded');
    assert.equal(second.chain.usdc.address, usdc, 'the same token');
    const code = await second.chain.publicClient.getCode({ address: usdc });
    assert.ok(code !== undefined && code !== '0x', 'the token still has code');
    assert.equal(await balanceOf(second.chain, payee), 1_234_567n);
    assert.equal(await balanceOf(second.chain, buyer.address), DEV_USDC_PER_ACCOUNT - 1_234_567n);
    assert.ok((await second.chain.publicClient.getBlockNumber()) >= height, 'the chain did not go back');
    const receipt = await second.chain.publicClient.getTransactionReceipt({ hash });
    assert.equal(receipt.status, 'success', 'the transaction history survived too');
  });

  test('a crashed anvil is restarted on the same URL and the test USDC is checked again', async () => {
    const t = track(await startTestChain());
    const { chain } = t;
    const before = chain.dev?.process?.pid;
    assert.ok(before !== undefined);
    const url = chain.rpcUrl;
    process.kill(before, 'SIGKILL');
    const after = await waitFor(async () => {
      const pid = chain.dev?.process?.pid;
      return pid !== undefined && pid !== before ? pid : undefined;
    }, CHAIN_WAIT_MS, 'a new anvil');
    assert.ok(processAlive(after));
    assert.equal(chain.rpcUrl, url, 'the same port');
    // Whether or not the last dump held the token, it is there again, funded, at the same address.
    // Reads fail while anvil comes back and the token is deployed again: retried until one holds.
    await eventually(async () => assert.equal(await balanceOf(chain, chain.dev!.accounts[0]!), DEV_USDC_PER_ACCOUNT), CHAIN_WAIT_MS, 'the token again');
    await t.stop();
    assert.equal(processAlive(after), false);
  });

  test('an unreadable state file is set aside and the chain rebuilt with the token at the same address', async () => {
    const reference = track(await startTestChain());
    const expected = reference.chain.usdc.address;
    await reference.stop();

    const dataDir = tempDataDir();
    mkdirSync(path.join(dataDir, 'devchain'), { recursive: true });
    writeFileSync(path.join(dataDir, 'devchain', 'state.json'), '{"block": trunc');
    const t = track(await startTestChain({ dataDir }));
    assert.equal(t.chain.dev?.process?.startedFresh, true);
    assert.equal(t.chain.usdc.address, expected, 'the first deployment of the deployer lands at the same address');
    assert.ok(readdirSync(path.join(dataDir, 'devchain')).some((f) => f.startsWith('state.json.unreadable-')), 'the bad file is kept aside');
    assert.equal(await balanceOf(t.chain, t.chain.dev.accounts[3]!), DEV_USDC_PER_ACCOUNT);
  });

  test('DEV_CHAIN_PORT fixes the port', async () => {
    const port = await freePort();
    const t = track(await startTestChain({ env: { DEV_CHAIN_PORT: String(port) } }));
    assert.equal(t.chain.rpcUrl, `http://127.0.0.1:${port}`);
    assert.equal(await t.chain.publicClient.getChainId(), 31337);
  });
});
