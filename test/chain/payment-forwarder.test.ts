/**
 * Payment addresses on the real dev chain: the factories the chain starts with (version 2 for new
 * receipts, version 1 for older ones), offline prediction, one-transaction deploy-and-sweep into
 * the split, later top-ups, other tokens and native ETH, EIP-3009 payAndSweep, and attempts to
 * steal, redirect or strand the money or replay an authorization. Gas is measured and bounded.
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
  keccak256,
  parseEther,
  toBytes,
  toFunctionSelector,
  parseEventLogs,
  type Abi,
  type Account,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import forwarderArtifact from '../../src/chain/artifacts/PaymentForwarder.json' with { type: 'json' };
import factoryArtifact from '../../src/chain/artifacts/PaymentForwarderFactory.json' with { type: 'json' };
import forwarderV2Artifact from '../../src/chain/artifacts/PaymentForwarderV2.json' with { type: 'json' };
import factoryV2Artifact from '../../src/chain/artifacts/PaymentForwarderFactoryV2.json' with { type: 'json' };
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
  NATIVE_TOKEN,
  paymentForwarderAbi,
  paymentForwarderFactoryAbi,
  paymentForwarderFactoryV2Abi,
  paymentForwarderV2Abi,
  paymentSalt,
  predictPaymentAddress,
  sweepPayment,
} from '../../src/chain/payment-address.ts';
import { deploySplit } from '../../src/chain/split-contract.ts';
import { deployTestUsdc, testUsdcAbi } from '../../src/chain/test-usdc.ts';
import { eip3009Abi, signatureParts, tokenDomain, transferAuthorizationTypedData } from '../../src/chain/eip3009.ts';
import { loadConfig } from '../../src/config.ts';
import { CHAIN_WAIT_MS, PLATFORM, startTestChain, testLogger, type TestChain } from './helpers.ts';
import { waitFor } from '../helpers/wait.ts';

/** PaymentSplitter's native-ETH release, open to anyone. */
const splitterEthAbi = [
  { type: 'function', name: 'release', stateMutability: 'nonpayable', inputs: [{ name: 'account', type: 'address' }], outputs: [] },
  { type: 'function', name: 'released', stateMutability: 'view', inputs: [{ name: 'account', type: 'address' }], outputs: [{ name: '', type: 'uint256' }] },
] as const;

let t: TestChain;
let chain: ChainDeps;
let service: ChainWalletClient;
/** The version-2 factory, which new receipts are addressed through. */
let factory: Address;
/** The version-1 factory, kept for older receipts. */
let factoryV1: Address;
let buyer: ChainWalletClient;
let stranger: ChainWalletClient;

before(async () => {
  t = await startTestChain();
  chain = t.chain;
  assert.ok(chain.walletClient);
  service = chain.walletClient;
  assert.ok(chain.paymentFactory, 'the dev chain starts with a payment factory');
  factory = chain.paymentFactory;
  assert.ok(chain.paymentFactoryV1, 'the dev chain starts with the version-1 factory too');
  factoryV1 = chain.paymentFactoryV1;
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
    assert.deepEqual(JSON.parse(JSON.stringify(paymentForwarderV2Abi)), forwarderV2Artifact.abi);
    assert.deepEqual(JSON.parse(JSON.stringify(paymentForwarderFactoryV2Abi)), factoryV2Artifact.abi);
  });

  test('each factory sits at factoryAddress(version), ensurePaymentFactory again is a no-op, and its implementation is where expected', async () => {
    assert.equal(factory, factoryAddress(2));
    assert.equal(factoryV1, factoryAddress(1));
    assert.notEqual(factory, factoryV1);
    assert.equal(await pub().readContract({ address: factory, abi: paymentForwarderFactoryV2Abi, functionName: 'version' }), 2n);
    assert.ok(await hasCode(factory));
    assert.ok(await hasCode(CREATE2_DEPLOYER), 'anvil has the CREATE2 deployment proxy by default');
    const nonce = await pub().getTransactionCount({ address: service.account.address });
    assert.equal(await ensurePaymentFactory({ walletClient: service, publicClient: pub(), logger: testLogger(), version: 2 }), factory);
    assert.equal(await ensurePaymentFactory({ walletClient: service, publicClient: pub(), logger: testLogger(), version: 2 }), factory);
    assert.equal(await ensurePaymentFactory({ walletClient: service, publicClient: pub(), logger: testLogger(), version: 1 }), factoryV1);
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
      assert.equal(address, factoryAddress(2));
      assert.equal(first.chain.paymentFactoryV1, factoryAddress(1));
      assert.ok(first.chain.walletClient);
      const deployer = first.chain.walletClient.account.address;
      const nonce = await first.chain.publicClient.getTransactionCount({ address: deployer });
      await first.stop();
      const second = await startTestChain({ dataDir: first.dataDir });
      try {
        assert.equal(second.chain.paymentFactory, address);
        assert.equal(second.chain.paymentFactoryV1, factoryAddress(1));
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
    assert.equal(found.paymentFactoryV1, factoryV1, 'version 1 is found at its fixed address');
    await found.close();
    const v1Named = await join({ PAYMENT_FACTORY_V1_ADDRESS: factoryV1.toLowerCase() });
    assert.equal(v1Named.paymentFactoryV1, factoryV1);
    await v1Named.close();
    // A merchant who upgrades without changing the setting: the version-1 factory is not taken for version 2.
    await assert.rejects(join({ PAYMENT_FACTORY_ADDRESS: factoryV1 }), (err: unknown) => {
      assert.ok(err instanceof PaymentFactoryError, String(err));
      assert.equal(err.reason, 'not_v2');
      assert.match(err.message, new RegExp(`PAYMENT_FACTORY_V1_ADDRESS=${factoryV1}`));
      return true;
    });
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
      await assert.rejects(ensurePaymentFactory({ walletClient, publicClient, logger: testLogger(), version: 2 }), (err: unknown) => {
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

  test('a deployed version-1 forwarder refuses plain ETH; a version-1 factory cannot sweep ETH', async () => {
    const v1Salt = newSalt();
    const v1 = getAddress(predictPaymentAddress({ factory: factoryV1, split, salt: v1Salt }));
    await sweepPayment({ walletClient: service, publicClient: pub(), factory: factoryV1, split, salt: v1Salt, token: chain.usdc.address });
    assert.ok(await hasCode(v1));
    await assert.rejects(buyer.sendTransaction({ to: v1, value: 1n }));
    assert.equal(await sendAnyway(buyer, { to: v1, value: 1_000n }), 'reverted');
    assert.equal(await pub().getBalance({ address: v1 }), 0n);
    await assertRefused(service, factoryV1, '', { abi: paymentForwarderFactoryAbi, functionName: 'sweep', args: [split, v1Salt, NATIVE_TOKEN] });
  });

  test('a sweep for the zero split is refused', async () => {
    await assertRefused(service, factory, 'ZeroSplit', {
      abi: paymentForwarderFactoryAbi,
      functionName: 'sweep',
      args: ['0x0000000000000000000000000000000000000000', salt, chain.usdc.address],
    });
  });
});

describe('native ETH (version 2)', () => {
  const releasedEth = (split: Address, account: Address) =>
    pub().readContract({ address: split, abi: splitterEthAbi, functionName: 'released', args: [account] });

  test('ETH sent before the forwarder exists is kept by its deployment and swept into the split, which releases it', async () => {
    const merchant = privateKeyToAccount(generatePrivateKey()).address;
    const split = (await deploySplit({ walletClient: service, publicClient: pub(), recipients: [{ address: merchant, sharesBps: 9950 }, { address: PLATFORM, sharesBps: 50 }] })).address;
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split, salt }));
    const hash = await buyer.sendTransaction({ to: address, value: parseEther('1') });
    assert.equal((await pub().waitForTransactionReceipt({ hash })).status, 'success');
    assert.equal(await hasCode(address), false);
    assert.equal(await pub().getBalance({ address }), parseEther('1'));

    const watched: Address[] = [factory, forwarderImplementation(factory), stranger.account.address, PLATFORM, merchant];
    const before = await Promise.all(watched.map((a) => pub().getBalance({ address: a })));
    // A stranger sends the sweep: who sends it does not matter.
    const swept = await sweepPayment({ walletClient: stranger, publicClient: pub(), factory, split, salt, token: NATIVE_TOKEN });
    assert.ok(await hasCode(address));
    assert.equal(await pub().getBalance({ address }), 0n);
    assert.equal(await pub().getBalance({ address: split }), parseEther('1'));
    assert.deepEqual((await sweptEvents(swept.hash))[0]?.args, { forwarder: address, split, token: NATIVE_TOKEN, amount: parseEther('1') });
    const after = await Promise.all(watched.map((a) => pub().getBalance({ address: a })));
    const sweptReceipt = await pub().getTransactionReceipt({ hash: swept.hash });
    const gas = sweptReceipt.gasUsed * sweptReceipt.effectiveGasPrice;
    assert.deepEqual(after, before.map((b, i) => (watched[i] === stranger.account.address ? b - gas : b)), 'only the sender paid, and only gas');

    // PaymentSplitter releases ETH with release(account), open to anyone.
    const release = await stranger.writeContract({ address: split, abi: splitterEthAbi, functionName: 'release', args: [merchant] });
    assert.equal((await pub().waitForTransactionReceipt({ hash: release })).status, 'success');
    assert.equal(await pub().getBalance({ address: merchant }), (parseEther('1') * 9950n) / 10000n);
    assert.equal(await releasedEth(split, merchant), (parseEther('1') * 9950n) / 10000n);
  });

  test('ETH sent to a deployed forwarder is accepted and swept; anyone may sweep it directly, into the split only', async () => {
    const split = await newSplit();
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split, salt }));
    await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    assert.ok(await hasCode(address));
    const hash = await buyer.sendTransaction({ to: address, value: 5_000n });
    assert.equal((await pub().waitForTransactionReceipt({ hash })).status, 'success');
    assert.equal(await pub().getBalance({ address }), 5_000n);
    const direct = await stranger.writeContract({ address, abi: paymentForwarderV2Abi, functionName: 'sweepNative' });
    assert.equal((await pub().waitForTransactionReceipt({ hash: direct })).status, 'success');
    assert.equal(await pub().getBalance({ address: split }), 5_000n);
    assert.equal(await pub().getBalance({ address }), 0n);
    // An empty ETH sweep moves nothing, harmlessly.
    const empty = await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: NATIVE_TOKEN });
    assert.equal((await sweptEvents(empty.hash))[0]?.args.amount, 0n);
  });

  test('ETH cannot be redirected: another split’s sweep with the same salt moves nothing; the implementation refuses ETH and sweeps', async () => {
    const splitA = await newSplit();
    const splitB = await newSplit();
    const shared = newSalt();
    const atA = getAddress(predictPaymentAddress({ factory, split: splitA, salt: shared }));
    const hash = await buyer.sendTransaction({ to: atA, value: 7_000n });
    await pub().waitForTransactionReceipt({ hash });
    const wrong = await sweepPayment({ walletClient: stranger, publicClient: pub(), factory, split: splitB, salt: shared, token: NATIVE_TOKEN });
    assert.equal((await sweptEvents(wrong.hash))[0]?.args.amount, 0n);
    assert.equal(await pub().getBalance({ address: atA }), 7_000n);
    assert.equal(await pub().getBalance({ address: splitB }), 0n);

    const implementation = forwarderImplementation(factory);
    assert.equal(await sendAnyway(buyer, { to: implementation, value: 1_000n }), 'reverted', 'nothing can be stranded at the implementation');
    assert.equal(await pub().getBalance({ address: implementation }), 0n);
    await assert.rejects(pub().simulateContract({ account: stranger.account, address: implementation, abi: paymentForwarderV2Abi, functionName: 'sweepNative' }), /NotInitialized/);

    await sweepPayment({ walletClient: stranger, publicClient: pub(), factory, split: splitA, salt: shared, token: NATIVE_TOKEN });
    assert.equal(await pub().getBalance({ address: splitA }), 7_000n);
  });

  test('a split that refuses ETH makes the sweep revert, and the ETH stays at the payment address', async () => {
    // The test USDC has no receive(): a "split" that refuses ETH.
    const refusing = chain.usdc.address;
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split: refusing, salt }));
    await pub().waitForTransactionReceipt({ hash: await buyer.sendTransaction({ to: address, value: 3_000n }) });
    await assert.rejects(
      pub().simulateContract({ account: stranger.account, address: factory, abi: paymentForwarderFactoryV2Abi, functionName: 'sweep', args: [refusing, salt, NATIVE_TOKEN] }),
      // The forwarder's error, bubbled through the factory: NativeTransferFailed().
      new RegExp(toFunctionSelector('NativeTransferFailed()')),
    );
    assert.equal(await pub().getBalance({ address }), 3_000n);
  });
});

describe('payAndSweep: an EIP-3009 authorization paid and swept in one transaction', () => {
  let payer: ReturnType<typeof privateKeyToAccount>;
  before(async () => {
    // A payer with test USDC and no ETH at all.
    payer = privateKeyToAccount(generatePrivateKey());
    const hash = await service.writeContract({ address: chain.usdc.address, abi: testUsdcAbi, functionName: 'mint', args: [payer.address, 1_000_000_000n] });
    await pub().waitForTransactionReceipt({ hash });
    assert.equal(await pub().getBalance({ address: payer.address }), 0n);
  });

  async function authorize(to: Address, value: bigint, opts: { validBefore?: bigint; validAfter?: bigint } = {}) {
    const domain = await tokenDomain(pub(), chain.usdc.address);
    const now = BigInt(Math.floor(Date.now() / 1000));
    const message = {
      from: payer.address,
      to,
      value,
      validAfter: opts.validAfter ?? 0n,
      validBefore: opts.validBefore ?? now + 3600n,
      nonce: keccak256(toBytes(randomUUID())),
    };
    const signature = await payer.signTypedData(transferAuthorizationTypedData(domain, message));
    const { v, r, s } = signatureParts(signature);
    return { message, auth: { from: message.from, value, validAfter: message.validAfter, validBefore: message.validBefore, nonce: message.nonce, v, r, s } };
  }

  type Auth = Awaited<ReturnType<typeof authorize>>['auth'];
  const payAndSweep = (wallet: ChainWalletClient, split: Address, salt: Hex, auth: Auth) =>
    wallet.writeContract({ address: factory, abi: paymentForwarderFactoryV2Abi, functionName: 'payAndSweep', args: [split, salt, chain.usdc.address, auth] });
  const simulatePayAndSweep = (wallet: ChainWalletClient, split: Address, salt: Hex, auth: Auth) =>
    pub().simulateContract({ account: wallet.account, address: factory, abi: paymentForwarderFactoryV2Abi, functionName: 'payAndSweep', args: [split, salt, chain.usdc.address, auth] });

  test('the token’s domain is read from the token: name and version as FiatTokenV2 has them', async () => {
    const domain = await tokenDomain(pub(), chain.usdc.address);
    assert.equal(domain.name, 'USD Coin (test)');
    assert.equal(domain.version, '2');
    assert.equal(domain.chainId, pub().chain.id);
  });

  test('one transaction moves the money to the payment address and sweeps it, with what was there before', async () => {
    const split = await newSplit();
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split, salt }));
    await pay(address, 1_000n); // a payment that arrived earlier is swept along
    const { auth } = await authorize(address, 4_000_000n);
    const payerBefore = await balanceOf(payer.address);
    const hash = await payAndSweep(service, split, salt, auth);
    const mined = await pub().waitForTransactionReceipt({ hash });
    assert.equal(mined.status, 'success');
    assert.equal(await balanceOf(split), 4_001_000n);
    assert.equal(await balanceOf(address), 0n);
    assert.equal(payerBefore - (await balanceOf(payer.address)), 4_000_000n);
    const transfers = parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: mined.logs });
    assert.deepEqual(
      transfers.map((l) => [l.args.from, l.args.to, l.args.value]),
      [
        [payer.address, address, 4_000_000n],
        [address, split, 4_001_000n],
      ],
      'an ordinary transfer to the payment address, then the sweep',
    );
    console.log(`gas: payAndSweep (authorization + deploy + sweep) ${mined.gasUsed}`);
    assert.ok(mined.gasUsed < 200_000n, `payAndSweep used ${mined.gasUsed}`);

    // Replayed, by anyone: the token refuses a used authorization.
    for (const wallet of [service, stranger]) await assert.rejects(simulatePayAndSweep(wallet, split, salt, auth), /authorization is used/);
    assert.equal(await balanceOf(split), 4_001_000n);
  });

  test('front-run: whoever submits first only pays the gas; the money lands at the split, and the late submission is refused', async () => {
    const split = await newSplit();
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split, salt }));
    const { auth } = await authorize(address, 2_000_000n);
    const strangerTokens = await balanceOf(stranger.account.address);
    const hash = await payAndSweep(stranger, split, salt, auth);
    assert.equal((await pub().waitForTransactionReceipt({ hash })).status, 'success');
    assert.equal(await balanceOf(split), 2_000_000n);
    assert.equal(await balanceOf(stranger.account.address), strangerTokens);
    await assert.rejects(simulatePayAndSweep(service, split, salt, auth), /authorization is used/);

    // Front-run on the token itself: the money can only reach the payment address, and its sweep the split.
    const second = await authorize(address, 3_000_000n);
    const m = second.message;
    const direct = await stranger.writeContract({
      address: chain.usdc.address,
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, second.auth.v, second.auth.r, second.auth.s],
    });
    assert.equal((await pub().waitForTransactionReceipt({ hash: direct })).status, 'success');
    assert.equal(await balanceOf(address), 3_000_000n);
    await assert.rejects(simulatePayAndSweep(service, split, salt, second.auth), /authorization is used/);
    await sweepPayment({ walletClient: service, publicClient: pub(), factory, split, salt, token: chain.usdc.address });
    assert.equal(await balanceOf(split), 5_000_000n);
  });

  test('an authorization cannot be redirected: another split, another salt, a wrong to, another value, an expired or early one', async () => {
    const split = await newSplit();
    const salt = newSalt();
    const address = getAddress(predictPaymentAddress({ factory, split, salt }));
    const { auth } = await authorize(address, 1_000_000n);
    const strangerSplit = await newSplit();
    await assert.rejects(simulatePayAndSweep(stranger, strangerSplit, salt, auth), /invalid signature/, 'another split');
    await assert.rejects(simulatePayAndSweep(stranger, split, newSalt(), auth), /invalid signature/, 'another salt');
    await assert.rejects(simulatePayAndSweep(stranger, split, salt, { ...auth, value: 2_000_000n }), /invalid signature/, 'another value');
    await assert.rejects(simulatePayAndSweep(stranger, split, salt, { ...auth, from: stranger.account.address }), /invalid signature/, 'another payer');

    const toStranger = await authorize(stranger.account.address, 1_000_000n);
    await assert.rejects(simulatePayAndSweep(stranger, split, salt, toStranger.auth), /invalid signature/, 'signed to another address');

    const now = BigInt((await pub().getBlock()).timestamp);
    const expired = await authorize(address, 1_000_000n, { validBefore: now - 1n });
    await assert.rejects(simulatePayAndSweep(service, split, salt, expired.auth), /authorization is expired/);
    const early = await authorize(address, 1_000_000n, { validAfter: now + 3600n });
    await assert.rejects(simulatePayAndSweep(service, split, salt, early.auth), /authorization is not yet valid/);
    // Sent anyway (no estimation), every one of them reverts and moves nothing.
    const payerBefore = await balanceOf(payer.address);
    const data = encodeFunctionData({ abi: paymentForwarderFactoryV2Abi, functionName: 'payAndSweep', args: [strangerSplit, salt, chain.usdc.address, auth] });
    assert.equal(await sendAnyway(stranger, { to: factory, data }), 'reverted');
    assert.equal(await balanceOf(payer.address), payerBefore);
    assert.equal(await balanceOf(strangerSplit), 0n);

    // The genuine one still works afterwards.
    await pub().waitForTransactionReceipt({ hash: await payAndSweep(service, split, salt, auth) });
    assert.equal(await balanceOf(split), 1_000_000n);
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
