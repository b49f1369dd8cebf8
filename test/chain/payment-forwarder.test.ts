/**
 * Payment addresses on the real dev chain: the factory the chain starts with, offline prediction,
 * one-transaction deploy-and-sweep into the split, later top-ups and other tokens, and attempts
 * to steal, redirect or strand the money. Gas is measured and bounded.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  http,
  parseEther,
  parseEventLogs,
  type Abi,
  type Account,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import forwarderArtifact from '../../src/chain/artifacts/PaymentForwarder.json' with { type: 'json' };
import factoryArtifact from '../../src/chain/artifacts/PaymentForwarderFactory.json' with { type: 'json' };
import { startChain, type ChainDeps, type ChainPublicClient, type ChainWalletClient } from '../../src/chain/client.ts';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { anvilBinary } from '../../src/chain/dev-chain.ts';
import { isContractRefusal } from '../../src/chain/errors.ts';
import {
  CREATE2_DEPLOYER,
  PaymentFactoryError,
  ensurePaymentFactory,
  factoryAddress,
  forwarderImplementation,
  paymentForwarderAbi,
  paymentForwarderFactoryAbi,
  paymentSalt,
  predictPaymentAddress,
  sweepPayment,
} from '../../src/chain/payment-address.ts';
import { deploySplit } from '../../src/chain/split-contract.ts';
import { deployTestUsdc } from '../../src/chain/test-usdc.ts';
import { loadConfig } from '../../src/config.ts';
import { CHAIN_WAIT_MS, PLATFORM, startTestChain, testLogger, type TestChain } from './helpers.ts';
import { waitFor } from '../helpers/wait.ts';

let t: TestChain;
let chain: ChainDeps;
let service: ChainWalletClient;
let factory: Address;
let buyer: ChainWalletClient;
let stranger: ChainWalletClient;

before(async () => {
  t = await startTestChain();
  chain = t.chain;
  assert.ok(chain.walletClient);
  service = chain.walletClient;
  assert.ok(chain.paymentFactory, 'the dev chain starts with a payment factory');
  factory = chain.paymentFactory;
  const wallet = (account: Account) =>
    createWalletClient({ chain: chain.publicClient.chain, transport: http(chain.rpcUrl), account, pollingInterval: 50 }) as ChainWalletClient;
  buyer = wallet(devAccount(1));
  const strangerAccount = privateKeyToAccount(generatePrivateKey());
  await createTestClient({ chain: chain.publicClient.chain, transport: http(chain.rpcUrl), mode: 'anvil' }).setBalance({
    address: strangerAccount.address,
    value: parseEther('10'),
  });
  stranger = wallet(strangerAccount);
});
after(async () => {
  await t.close();
});

const pub = (): ChainPublicClient => chain.publicClient;

const balanceOf = (account: Address, token: Address = chain.usdc.address) =>
  pub().readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [account] });

async function newSplit(): Promise<Address> {
  const merchant = privateKeyToAccount(generatePrivateKey()).address;
  const recipients = [
    { address: merchant, sharesBps: 9950 },
    { address: PLATFORM, sharesBps: 50 },
  ];
  return (await deploySplit({ walletClient: service, publicClient: pub(), recipients })).address;
}

function newSalt(): Hex {
  return paymentSalt(devAccount(0).address, randomUUID());
}

async function pay(to: Address, amount: bigint, token: Address = chain.usdc.address): Promise<bigint> {
  const hash = await buyer.writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to, amount] });
  const receipt = await pub().waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, 'success');
  return receipt.gasUsed;
}

async function hasCode(address: Address): Promise<boolean> {
  const code = await pub().getCode({ address });
  return code !== undefined && code !== '0x';
}

/** The Swept events of one transaction. */
async function sweptEvents(hash: Hex) {
  const receipt = await pub().getTransactionReceipt({ hash });
  return parseEventLogs({ abi: paymentForwarderFactoryAbi, eventName: 'Swept', logs: receipt.logs });
}

/** Token balances of every account the test knows, to show that a sweep moved nothing else. */
async function balances(accounts: readonly Address[], token: Address = chain.usdc.address): Promise<Map<Address, bigint>> {
  const out = new Map<Address, bigint>();
  for (const a of accounts) out.set(getAddress(a), await balanceOf(a, token));
  return out;
}

function bystanders(...extra: Address[]): Address[] {
  assert.ok(chain.dev);
  return [...chain.dev.accounts, factory, forwarderImplementation(factory), stranger.account.address, PLATFORM, ...extra];
}

/**
 * Sends the call with a fixed gas limit (no estimation, which would refuse it before it left) and
 * returns whether the chain executed it or reverted it.
 */
async function sendAnyway(wallet: ChainWalletClient, tx: { to: Address; data?: Hex; value?: bigint }): Promise<'success' | 'reverted'> {
  const hash = await wallet.sendTransaction({ ...tx, gas: 200_000n });
  return (await pub().waitForTransactionReceipt({ hash })).status;
}

describe('the factory and its addresses', () => {
  test('the typed ABIs are the artifacts’ ABIs', () => {
    assert.deepEqual(JSON.parse(JSON.stringify(paymentForwarderAbi)), forwarderArtifact.abi);
    assert.deepEqual(JSON.parse(JSON.stringify(paymentForwarderFactoryAbi)), factoryArtifact.abi);
  });

  test('the factory sits at factoryAddress(), ensurePaymentFactory again is a no-op, and its implementation is where expected', async () => {
    assert.equal(factory, factoryAddress());
    assert.ok(await hasCode(factory));
    assert.ok(await hasCode(CREATE2_DEPLOYER), 'anvil has the CREATE2 deployment proxy by default');
    const nonce = await pub().getTransactionCount({ address: service.account.address });
    assert.equal(await ensurePaymentFactory({ walletClient: service, publicClient: pub(), logger: testLogger() }), factory);
    assert.equal(await ensurePaymentFactory({ walletClient: service, publicClient: pub(), logger: testLogger() }), factory);
    assert.equal(await pub().getTransactionCount({ address: service.account.address }), nonce, 'no transaction was sent');

    const implementation = await pub().readContract({ address: factory, abi: paymentForwarderFactoryAbi, functionName: 'implementation' });
    assert.equal(implementation, forwarderImplementation(factory));
    assert.equal(await pub().readContract({ address: implementation, abi: paymentForwarderAbi, functionName: 'factory' }), factory);
    assert.equal(
      await pub().readContract({ address: implementation, abi: paymentForwarderAbi, functionName: 'split' }),
      '0x0000000000000000000000000000000000000000',
      'the implementation is never initialized',
    );
  });

  test('the offline prediction equals factory.predict and is where the forwarder is deployed', async () => {
    const split = await newSplit();
    const salt = newSalt();
    const predicted = predictPaymentAddress({ factory, split, salt });
    assert.match(predicted, /^0x[0-9a-f]{40}$/, 'lower case');
    const onChain = await pub().readContract({ address: factory, abi: paymentForwarderFactoryAbi, functionName: 'predict', args: [split, salt] });
    assert.equal(predicted, onChain.toLowerCase());
    // Any letter case of the inputs gives the same answer.
    assert.equal(predictPaymentAddress({ factory: factory.toLowerCase() as Address, split: split.toLowerCase() as Address, salt }), predicted);

    assert.equal(await hasCode(getAddress(predicted)), false);
    const swept = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    const [event] = await sweptEvents(swept.hash);
    assert.equal(event?.args.forwarder.toLowerCase(), predicted);
    const code = await pub().getCode({ address: getAddress(predicted) });
    const implementation = forwarderImplementation(factory).slice(2).toLowerCase();
    assert.equal(code, `0x363d3d373d3d3d363d73${implementation}5af43d82803e903d91602b57fd5bf3`, 'an EIP-1167 clone of the implementation');
    assert.equal(await pub().readContract({ address: getAddress(predicted), abi: paymentForwarderAbi, functionName: 'split' }), split);
  });

  test('paymentSalt binds the wallet (any letter case) and the receipt id', () => {
    const wallet = devAccount(0).address;
    assert.equal(paymentSalt(wallet, 'r1'), paymentSalt(wallet.toLowerCase(), 'r1'));
    assert.notEqual(paymentSalt(wallet, 'r1'), paymentSalt(wallet, 'r2'));
    assert.notEqual(paymentSalt(wallet, 'r1'), paymentSalt(devAccount(2).address, 'r1'));
    assert.throws(() => predictPaymentAddress({ factory, split: factory, salt: '0x1234' }), TypeError);
  });

  test('predictPaymentAddress gives every receipt its own address (and is cheap enough to run per receipt)', () => {
    const split = getAddress(`0x${'ab'.repeat(20)}`);
    const seen = new Set<string>();
    const started = process.hrtime.bigint();
    for (let i = 0; i < 2_000; i++) seen.add(predictPaymentAddress({ factory, split, salt: paymentSalt(split, String(i)) }));
    const perCallUs = Number(process.hrtime.bigint() - started) / 2_000 / 1_000;
    // Timing is reported, not asserted: wall-clock limits make tests flaky.
    console.log(`predictPaymentAddress + paymentSalt: ${perCallUs.toFixed(1)} µs per call`);
    assert.equal(seen.size, 2_000);
  });

  test('after a restart on the same DATA_DIR the factory is found again, not deployed again', async () => {
    const first = await startTestChain();
    try {
      const address = first.chain.paymentFactory;
      assert.equal(address, factoryAddress());
      assert.ok(first.chain.walletClient);
      const deployer = first.chain.walletClient.account.address;
      const nonce = await first.chain.publicClient.getTransactionCount({ address: deployer });
      await first.stop();
      const second = await startTestChain({ dataDir: first.dataDir });
      try {
        assert.equal(second.chain.paymentFactory, address);
        assert.equal(await second.chain.publicClient.getTransactionCount({ address: deployer }), nonce, 'nothing was deployed again');
      } finally {
        await second.stop();
      }
    } finally {
      await first.close();
    }
  });

  test('joining a dev chain: PAYMENT_FACTORY_ADDRESS must hold code; without it the factory is found at its address', async () => {
    const join = (env: Record<string, string>) =>
      startChain({
        config: loadConfig({ DATA_DIR: t.dataDir, LOG_LEVEL: 'silent', CHAIN: 'dev', RPC_URL: chain.rpcUrl, USDC_ADDRESS: chain.usdc.address, ...env }),
        logger: testLogger(),
      });
    const found = await join({});
    assert.equal(found.paymentFactory, factory);
    await found.close();
    const named = await join({ PAYMENT_FACTORY_ADDRESS: factory.toLowerCase() });
    assert.equal(named.paymentFactory, factory);
    await named.close();
    const empty = getAddress(`0x${'5e'.repeat(20)}`);
    await assert.rejects(join({ PAYMENT_FACTORY_ADDRESS: empty }), (err: unknown) => {
      assert.ok(err instanceof PaymentFactoryError, String(err));
      assert.equal(err.reason, 'no_code');
      assert.match(err.message, new RegExp(`PAYMENT_FACTORY_ADDRESS ${empty}`));
      return true;
    });
  });

  test('without the CREATE2 deployment proxy, ensurePaymentFactory says so', async () => {
    const node = await startBareAnvil(['--no-create2']);
    try {
      const chainDef = { ...chain.publicClient.chain, rpcUrls: { default: { http: [node.url] } } };
      const publicClient = createPublicClient({ chain: chainDef, transport: http(node.url) }) as ChainPublicClient;
      const walletClient = createWalletClient({ chain: chainDef, transport: http(node.url), account: devAccount(0) }) as ChainWalletClient;
      await assert.rejects(ensurePaymentFactory({ walletClient, publicClient, logger: testLogger() }), (err: unknown) => {
        assert.ok(err instanceof PaymentFactoryError, String(err));
        assert.equal(err.reason, 'no_create2_deployer');
        assert.match(err.message, /CREATE2 deployment proxy/);
        assert.match(err.message, /PAYMENT_FACTORY_ADDRESS/);
        return true;
      });
    } finally {
      await node.stop();
    }
  });
});

describe('paying a payment address and sweeping it', () => {
  test('one sweep deploys the forwarder and moves the whole balance into the split, and nothing else', async () => {
    const split = await newSplit();
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split, salt }));
    const amount = 12_345_678n;
    await pay(address, amount);
    assert.equal(await hasCode(address), false, 'the buyer paid an address with no code yet');
    assert.equal(await balanceOf(address), amount);

    const others = bystanders();
    const before = await balances(others);
    const supply = await pub().readContract({ address: chain.usdc.address, abi: erc20Abi, functionName: 'totalSupply' });
    const splitBefore = await balanceOf(split);

    const swept = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    const receipt = await pub().getTransactionReceipt({ hash: swept.hash });
    assert.equal(receipt.to?.toLowerCase(), factory.toLowerCase(), 'one transaction, to the factory');
    assert.equal(swept.blockNumber, receipt.blockNumber);
    assert.ok(await hasCode(address), 'the forwarder is deployed');
    assert.equal(await balanceOf(address), 0n);
    assert.equal((await balanceOf(split)) - splitBefore, amount);
    assert.deepEqual(await balances(others), before, 'no other balance changed');
    assert.equal(await pub().readContract({ address: chain.usdc.address, abi: erc20Abi, functionName: 'totalSupply' }), supply);

    const events = await sweptEvents(swept.hash);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]?.args, { forwarder: address, split, token: chain.usdc.address, amount });
  });

  test('a top-up is swept again; an empty address sweeps nothing, harmlessly, twice', async () => {
    const split = await newSplit();
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split, salt }));
    await pay(address, 5_000_000n);
    await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    await pay(address, 2_500_000n);
    const second = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    assert.equal((await sweptEvents(second.hash))[0]?.args.amount, 2_500_000n);
    assert.equal(await balanceOf(split), 7_500_000n);
    assert.equal(await balanceOf(address), 0n);

    const emptySalt = newSalt();
    const empty = getAddress(predictPaymentAddress({ factory, split, salt: emptySalt }));
    const others = bystanders(split);
    const before = await balances(others);
    for (let i = 0; i < 2; i++) {
      const swept = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt: emptySalt, token: chain.usdc.address });
      const events = await sweptEvents(swept.hash);
      assert.equal(events.length, 1);
      assert.equal(events[0]?.args.amount, 0n, `empty sweep ${i + 1} moved nothing`);
      assert.equal(events[0]?.args.forwarder, empty);
    }
    assert.deepEqual(await balances(others), before);
    assert.equal(await balanceOf(split), 7_500_000n);
  });

  test('a second ERC-20 is swept too, into the split only', async () => {
    const other = await deployTestUsdc({ walletClient: service, publicClient: pub(), holders: [buyer.account.address], amountEach: 1_000_000_000n });
    const token = other.address;
    assert.notEqual(token, chain.usdc.address);
    assert.equal(await pub().readContract({ address: token, abi: erc20Abi, functionName: 'symbol' }), 'USDC');
    assert.equal(await pub().readContract({ address: token, abi: erc20Abi, functionName: 'decimals' }), 6);

    const split = await newSplit();
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split, salt }));
    await pay(address, 3_000_000n);
    await pay(address, 40_000_000n, token);

    const others = bystanders();
    const before = await balances(others, token);
    const swept = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token });
    assert.deepEqual((await sweptEvents(swept.hash))[0]?.args, { forwarder: address, split, token, amount: 40_000_000n });
    assert.equal(await balanceOf(split, token), 40_000_000n);
    assert.equal(await balanceOf(address, token), 0n);
    assert.deepEqual(await balances(others, token), before);
    assert.equal(await balanceOf(address), 3_000_000n, 'the USDC waits for its own sweep');

    await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    assert.equal(await balanceOf(split), 3_000_000n);
    assert.equal(await balanceOf(address), 0n);
  });
});

describe('attempts to steal, redirect or strand a payment', () => {
  let split: Address;
  let salt: Hex;
  let forwarder: Address;
  before(async () => {
    split = await newSplit();
    salt = newSalt();
    forwarder = getAddress(predictPaymentAddress({ factory, split, salt }));
    await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    assert.ok(await hasCode(forwarder));
  });

  const initializeData = (to: Address) => ({
    abi: paymentForwarderAbi,
    functionName: 'initialize' as const,
    args: [to] as const,
  });

  async function assertRefused(wallet: ChainWalletClient, address: Address, reason: string, call: { abi: Abi; functionName: string; args: readonly unknown[] }): Promise<void> {
    await assert.rejects(
      pub().simulateContract({ account: wallet.account, address, ...call }),
      (err: unknown) => {
        assert.ok(isContractRefusal(err), String(err));
        assert.match(String(err), new RegExp(reason));
        return true;
      },
    );
  }

  test('initialize on a deployed forwarder reverts, from the service’s key and from a stranger', async () => {
    for (const wallet of [service, stranger]) {
      await assertRefused(wallet, forwarder, 'NotFactory', initializeData(wallet.account.address));
      const data = encodeFunctionData(initializeData(wallet.account.address));
      assert.equal(await sendAnyway(wallet, { to: forwarder, data }), 'reverted');
    }
    assert.equal(await pub().readContract({ address: forwarder, abi: paymentForwarderAbi, functionName: 'split' }), split);
  });

  test('the implementation can be neither initialized nor swept', async () => {
    const implementation = forwarderImplementation(factory);
    for (const wallet of [service, stranger]) {
      await assertRefused(wallet, implementation, 'NotFactory', initializeData(wallet.account.address));
      assert.equal(await sendAnyway(wallet, { to: implementation, data: encodeFunctionData(initializeData(wallet.account.address)) }), 'reverted');
    }
    await assertRefused(stranger, implementation, 'NotInitialized', { abi: paymentForwarderAbi, functionName: 'sweep', args: [chain.usdc.address] });
  });

  test('anyone may sweep a forwarder directly, and the money still goes only to its split', async () => {
    await pay(forwarder, 1_000_000n);
    const splitBefore = await balanceOf(split);
    const strangerBefore = await balanceOf(stranger.account.address);
    const hash = await stranger.writeContract({ address: forwarder, abi: paymentForwarderAbi, functionName: 'sweep', args: [chain.usdc.address] });
    assert.equal((await pub().waitForTransactionReceipt({ hash })).status, 'success');
    assert.equal((await balanceOf(split)) - splitBefore, 1_000_000n);
    assert.equal(await balanceOf(stranger.account.address), strangerBefore);
  });

  test('an address predicted for split A cannot be swept into split B with the same salt', async () => {
    const splitA = await newSplit();
    const splitB = await newSplit();
    const shared = newSalt();
    const atA = getAddress(predictPaymentAddress({ factory, split: splitA, salt: shared }));
    const atB = getAddress(predictPaymentAddress({ factory, split: splitB, salt: shared }));
    assert.notEqual(atA, atB);
    await pay(atA, 9_000_000n);

    const swept = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split: splitB, salt: shared, token: chain.usdc.address });
    const [event] = await sweptEvents(swept.hash);
    assert.equal(event?.args.forwarder, atB, 'the factory swept B’s own address');
    assert.equal(event?.args.amount, 0n);
    assert.equal(await balanceOf(splitB), 0n);
    assert.equal(await balanceOf(atA), 9_000_000n, 'the money at A’s address did not move');

    await sweepPayment({ walletClient: service, publicClient: pub(), factory, split: splitA, salt: shared, token: chain.usdc.address });
    assert.equal(await balanceOf(splitA), 9_000_000n);
  });

  test('a different salt gives a different address', async () => {
    const other = newSalt();
    const offline = predictPaymentAddress({ factory, split, salt: other });
    assert.notEqual(offline, forwarder.toLowerCase());
    const onChain = await pub().readContract({ address: factory, abi: paymentForwarderFactoryAbi, functionName: 'predict', args: [split, other] });
    assert.equal(onChain.toLowerCase(), offline);
  });

  test('plain ETH sent to a forwarder is refused', async () => {
    await assert.rejects(buyer.sendTransaction({ to: forwarder, value: 1n }));
    assert.equal(await sendAnyway(buyer, { to: forwarder, value: 1_000n }), 'reverted');
    assert.equal(await pub().getBalance({ address: forwarder }), 0n);
  });

  test('a sweep for the zero split is refused', async () => {
    await assertRefused(service, factory, 'ZeroSplit', {
      abi: paymentForwarderFactoryAbi,
      functionName: 'sweep',
      args: ['0x0000000000000000000000000000000000000000', salt, chain.usdc.address],
    });
  });
});

describe('gas', () => {
  test('a first sweep (deploy and sweep) and a later sweep stay cheap', async () => {
    const split = await newSplit();
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split, salt }));
    const transferToFresh = await pay(address, 10_000_000n);
    const first = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    const transferToHolder = await pay(address, 10_000_000n);
    const later = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    const emptyLater = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    console.log(
      `gas: first sweep (deploy + initialize + sweep) ${first.gasUsed}, later sweep ${later.gasUsed}, empty later sweep ${emptyLater.gasUsed}; ` +
        `plain USDC transfer to a fresh address ${transferToFresh}, to an emptied address ${transferToHolder}`,
    );
    assert.equal(await balanceOf(split), 20_000_000n);
    assert.ok(first.gasUsed < 150_000n, `first sweep used ${first.gasUsed}`);
    assert.ok(later.gasUsed < 60_000n, `later sweep used ${later.gasUsed}`);
  });
});

/** A bare anvil (no state), for the checks the shared dev chain cannot make. */
async function startBareAnvil(extra: string[]): Promise<{ url: string; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(anvilBinary(), ['--host', '127.0.0.1', '--port', '0', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    const port = await waitFor(async () => /Listening on 127\.0\.0\.1:(\d+)/.exec(output)?.[1], CHAIN_WAIT_MS, 'anvil to listen');
    return { url: `http://127.0.0.1:${port}`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
