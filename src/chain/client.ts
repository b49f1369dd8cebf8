/**
 * The service's view of its chain: viem clients, the USDC it accepts, and the account that
 * deploys split contracts server-side when there is one.
 *
 *   CHAIN=dev           the embedded anvil node (src/chain/dev-chain.ts) with the test USDC;
 *                       the deployer is the tenth test-mnemonic account unless SPLIT_DEPLOYER_KEY
 *   CHAIN=dev + RPC_URL an existing dev chain that someone else runs (another instance, a test's
 *                       anvil): joined, never started or stopped; USDC_ADDRESS names its token
 *   CHAIN=base          Base mainnet through RPC_URL, Circle's USDC
 *   CHAIN=base-sepolia  Base Sepolia through RPC_URL, Circle's test USDC
 *
 * The payment-forwarder factories (src/chain/payment-address.ts) are deployed at start on the
 * embedded dev chain, version 2 for new receipts and version 1 for receipts addressed through it;
 * elsewhere PAYMENT_FACTORY_ADDRESS names version 2 (or the deployer key deploys it once) and
 * PAYMENT_FACTORY_V1_ADDRESS version 1 (by default the one at its fixed address, if there).
 *
 * USDC_ADDRESS overrides the token on any chain. Every JSON-RPC request gives up after
 * RPC_TIMEOUT_MS, so a stalled node fails a worker pass (which then backs off) instead of hanging it.
 */
import path from 'node:path';
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  parseEther,
  type Account,
  type Address,
  type Chain,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
// viem/chains defines every chain viem knows (about 700) and costs ~13 MB of heap once imported;
// the op-stack entry point carries viem's own Base definitions and only ~25 others.
import { base, baseSepolia } from 'viem/op-stack';
import type { Logger } from 'pino';
import type { ChainName, Config } from '../config.ts';
import { DEV_ACCOUNT_COUNT, DEV_DEPLOYER_INDEX, devAccount } from './dev-accounts.ts';
import type { Db } from '../db/client.ts';
import { Deployer } from './deployer.ts';
import { devPublicClient } from './dev-public-client.ts';
import { DEV_CHAIN_ID, startDevChain, type DevChain } from './dev-chain.ts';
import { DevChainAttachError } from './errors.ts';
import { RpcBudget } from './rpc-budget.ts';
import { assertPaymentFactory, ensurePaymentFactory, factoryAddress } from './payment-address.ts';
import { ensureTestUsdc } from './test-usdc-setup.ts';
import type { TokenInfo } from './test-usdc.ts';

/** Circle's USDC on the public chains (6 decimals). */
export const USDC_ADDRESSES: Record<Exclude<ChainName, 'dev'>, Address> = {
  base: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  'base-sepolia': '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
};

export type ChainPublicClient = PublicClient<Transport, Chain>;
export type ChainWalletClient = WalletClient<Transport, Chain, Account>;

export interface DevChainInfo {
  /** The anvil this service runs; absent when it joined one run elsewhere (CHAIN=dev + RPC_URL). */
  process?: DevChain;
  /** The ten funded test-mnemonic accounts; the last is the service's deployer. */
  accounts: Address[];
}

export interface ChainDeps {
  name: ChainName;
  chainId: number;
  publicClient: ChainPublicClient;
  /** Present when the service can send transactions itself (dev chain, or SPLIT_DEPLOYER_KEY). */
  walletClient?: ChainWalletClient;
  /** The token payments are made in. On the dev chain it is re-checked after an anvil restart. */
  usdc: TokenInfo;
  /**
   * The version-2 PaymentForwarderFactoryV2 that new receipts' payment addresses commit to, which
   * deploys and sweeps them; undefined when none is configured and the service has no key to deploy
   * one (payments then wait at their addresses).
   */
  paymentFactory: Address | undefined;
  /**
   * The version-1 factory that receipts addressed before version 2 commit to (receipts.pay_factory
   * null); undefined when none is known (then no such receipt can exist here, or
   * PAYMENT_FACTORY_V1_ADDRESS must name it).
   */
  paymentFactoryV1: Address | undefined;
  /** The node's JSON-RPC URL as the service reaches it (for the dev chain: anvil on loopback). */
  rpcUrl: string;
  /** The provider's rate budget (src/chain/rpc-budget.ts); absent for the embedded dev chain, which has no limit. */
  rpcBudget?: RpcBudget;
  dev?: DevChainInfo;
  close(): Promise<void>;
}

export interface StartChainParams {
  config: Config;
  logger: Logger;
  /**
   * The database whose nonce keeper (chain_nonces) the deployer's start-up transactions use on a
   * node the service does not own (CHAIN=base, a joined dev chain). The embedded dev chain is this
   * process's own node: its start-up deployments take the node's count.
   */
  db?: Db;
}

const VIEM_CHAINS: Record<Exclude<ChainName, 'dev'>, Chain> = { base, 'base-sepolia': baseSepolia };


export async function startChain(p: StartChainParams): Promise<ChainDeps> {
  if (p.config.chain !== 'dev') return connectPublicChain(p, p.config.chain);
  return p.config.rpcUrl === undefined ? startDevChainDeps(p) : joinDevChain(p, p.config.rpcUrl);
}

async function connectPublicChain(p: StartChainParams, name: Exclude<ChainName, 'dev'>): Promise<ChainDeps> {
  const { config } = p;
  const rpcUrl = config.rpcUrl;
  // config.ts refuses CHAIN=base without RPC_URL; this guards callers that built a Config by hand.
  if (rpcUrl === undefined) throw new Error(`RPC_URL is required for CHAIN=${name}`);
  const chain = VIEM_CHAINS[name];
  const rpcBudget = new RpcBudget(config.rpcRateLimit);
  const transport = rpcBudget.transport(rpcUrl, config.rpcTimeoutMs);
  const publicClient: ChainPublicClient = createPublicClient({ chain, transport, pollingInterval: 1_000 });
  const walletClient =
    config.splitDeployerKey === undefined
      ? undefined
      : (createWalletClient({ chain, transport, account: privateKeyToAccount(config.splitDeployerKey) }) as ChainWalletClient);
  const usdc: TokenInfo = { address: getAddress(config.usdcAddress ?? USDC_ADDRESSES[name]), decimals: 6, symbol: 'USDC' };
  const paymentFactory = await resolvePaymentFactory({ config, logger: p.logger, publicClient, walletClient, db: p.db });
  const paymentFactoryV1 = await resolvePaymentFactoryV1({ config, publicClient });
  p.logger.info(
    {
      chain: name,
      chainId: chain.id,
      usdc: usdc.address,
      deployer: walletClient?.account.address ?? null,
      paymentFactory: paymentFactory ?? null,
      paymentFactoryV1: paymentFactoryV1 ?? null,
    },
    'chain: connected',
  );
  return {
    name,
    chainId: chain.id,
    publicClient,
    walletClient,
    usdc,
    paymentFactory,
    paymentFactoryV1,
    rpcUrl,
    rpcBudget,
    async close() {
      const close = (publicClient.transport as { getRpcClient?: () => Promise<{ close(): void }> }).getRpcClient;
      if (close !== undefined) (await close()).close();
    },
  };
}

/** anvil's chain, as viem's `foundry` defines it, on the RPC URL the dev chain listens on. */
function devChainDefinition(rpcUrl: string, id = DEV_CHAIN_ID): Chain {
  return defineChain({
    id,
    name: 'Splitline dev chain',
    nativeCurrency: { decimals: 18, name: 'Ether', symbol: 'ETH' },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

async function startDevChainDeps(p: StartChainParams): Promise<ChainDeps> {
  const { config, logger } = p;
  const dev = await startDevChain({
    dataDir: path.resolve(config.dataDir),
    port: config.devChainPort,
    blockTimeSeconds: config.devChainBlockTime,
    logger,
  });
  try {
    const chain = devChainDefinition(dev.rpcUrl);
    const transport = http(dev.rpcUrl, { timeout: config.rpcTimeoutMs });
    const publicClient = devPublicClient(chain, transport);
    const account = config.splitDeployerKey === undefined ? devAccount(DEV_DEPLOYER_INDEX) : privateKeyToAccount(config.splitDeployerKey);
    const walletClient = createWalletClient({ chain, transport, account, pollingInterval: 50 }) as ChainWalletClient;
    if (config.splitDeployerKey !== undefined) await fundWithTestEth(chain, transport, publicClient, account.address);
    const accounts = Array.from({ length: DEV_ACCOUNT_COUNT }, (_, i) => devAccount(i).address);
    const recordPath = path.join(path.dirname(dev.statePath), 'deployment.json');

    const ensureUsdc = async (): Promise<TokenInfo> => {
      if (config.usdcAddress !== undefined) return { address: getAddress(config.usdcAddress), decimals: 6, symbol: 'USDC' };
      return ensureTestUsdc({ walletClient, publicClient, holders: accounts, recordPath, logger });
    };
    const deps: ChainDeps = {
      name: 'dev',
      chainId: DEV_CHAIN_ID,
      publicClient,
      walletClient,
      usdc: await ensureUsdc(),
      paymentFactory: undefined,
      paymentFactoryV1: undefined,
      rpcUrl: dev.rpcUrl,
      dev: { process: dev, accounts },
      close: () => dev.stop(),
    };
    const ensureFactories = async (): Promise<void> => {
      deps.paymentFactoryV1 = await ensurePaymentFactory({ walletClient, publicClient, logger, version: 1 });
      deps.paymentFactory = await ensurePaymentFactory({ walletClient, publicClient, logger, version: 2 });
    };
    await ensureFactories();
    // A crash may lose the last seconds of state: check the token and the factories again after every restart.
    dev.onRestart(async () => {
      deps.usdc = await ensureUsdc();
      await ensureFactories();
    });
    logger.info(
      { rpcUrl: dev.rpcUrl, usdc: deps.usdc.address, deployer: account.address, paymentFactory: deps.paymentFactory, paymentFactoryV1: deps.paymentFactoryV1 },
      'dev chain: ready',
    );
    return deps;
  } catch (err) {
    await dev.stop();
    throw err;
  }
}

/**
 * CHAIN=dev with RPC_URL: several instances (or a test's apps) share one dev chain. The service
 * neither starts nor stops that node, and does not deploy a token on it: USDC_ADDRESS must name
 * the test USDC its owner deployed (config.ts requires it), and is checked before use. The chain
 * keeps the node's own id (anvil's 31337, or 8453 for the mainnet-shaped simulation in test/sim).
 */
async function joinDevChain(p: StartChainParams, rpcUrl: string): Promise<ChainDeps> {
  const { config, logger } = p;
  // config.ts requires it with RPC_URL on the dev chain; this guards callers that built a Config by hand.
  if (config.usdcAddress === undefined) throw new DevChainAttachError(rpcUrl, 'USDC_ADDRESS is not set');
  const rpcBudget = new RpcBudget(config.rpcRateLimit);
  const transport = rpcBudget.transport(rpcUrl, config.rpcTimeoutMs);
  const usdc: TokenInfo = { address: getAddress(config.usdcAddress), decimals: 6, symbol: 'USDC' };
  let chain: Chain;
  let code: string | undefined;
  try {
    // The node's own chain id: 31337 for anvil's default, 8453 for the mainnet-shaped simulation (test/sim).
    chain = devChainDefinition(rpcUrl, await createPublicClient({ transport }).getChainId());
    code = await createPublicClient({ chain, transport }).getCode({ address: usdc.address });
  } catch (err) {
    throw new DevChainAttachError(rpcUrl, 'the node does not answer', { cause: err });
  }
  const publicClient = devPublicClient(chain, transport);
  if (code === undefined || code === '0x') throw new DevChainAttachError(rpcUrl, `USDC_ADDRESS ${usdc.address} holds no contract there`);
  const account = config.splitDeployerKey === undefined ? devAccount(DEV_DEPLOYER_INDEX) : privateKeyToAccount(config.splitDeployerKey);
  const walletClient = createWalletClient({ chain, transport, account, pollingInterval: 50 }) as ChainWalletClient;
  if (config.splitDeployerKey !== undefined) await fundWithTestEth(chain, transport, publicClient, account.address);
  const paymentFactory = await resolvePaymentFactory({ config, logger, publicClient, walletClient, db: p.db });
  const paymentFactoryV1 = await resolvePaymentFactoryV1({ config, publicClient });
  logger.info(
    { rpcUrl, usdc: usdc.address, deployer: account.address, paymentFactory: paymentFactory ?? null, paymentFactoryV1: paymentFactoryV1 ?? null },
    'dev chain: joined an existing node',
  );
  return {
    name: 'dev',
    chainId: chain.id,
    publicClient,
    walletClient,
    usdc,
    paymentFactory,
    paymentFactoryV1,
    rpcUrl,
    rpcBudget,
    dev: { accounts: Array.from({ length: DEV_ACCOUNT_COUNT }, (_, i) => devAccount(i).address) },
    // The node belongs to whoever started it.
    close: () => Promise.resolve(),
  };
}

/**
 * The version-2 payment-forwarder factory on a chain the service does not own: PAYMENT_FACTORY_ADDRESS
 * when set (it must be a version-2 factory), else the one the deployer key deploys (or finds) at its fixed address.
 * Without either, payments wait safely at their addresses until someone sweeps them.
 */
async function resolvePaymentFactory(p: {
  config: Config;
  logger: Logger;
  publicClient: ChainPublicClient;
  walletClient: ChainWalletClient | undefined;
  db: Db | undefined;
}): Promise<Address | undefined> {
  if (p.config.paymentFactoryAddress !== undefined) {
    return assertPaymentFactory({ publicClient: p.publicClient, address: getAddress(p.config.paymentFactoryAddress), version: 2, setting: 'PAYMENT_FACTORY_ADDRESS' });
  }
  if (p.walletClient !== undefined) {
    const deployer = new Deployer(p.walletClient, p.publicClient, { db: p.db, maxFeeWei: p.config.maxFeeWei, logger: p.logger });
    return ensurePaymentFactory({ walletClient: p.walletClient, publicClient: p.publicClient, logger: p.logger, version: 2, deployer });
  }
  p.logger.warn('chain: no PAYMENT_FACTORY_ADDRESS and no SPLIT_DEPLOYER_KEY, so payments cannot be swept into splits (they wait at their payment addresses)');
  return undefined;
}

/**
 * The version-1 factory of receipts addressed before version 2: PAYMENT_FACTORY_V1_ADDRESS when set
 * (it must hold code), else the one at its fixed CREATE2 address when deployed there, else none
 * (nothing is deployed: a deployment that never had version 1 has no such receipts).
 */
async function resolvePaymentFactoryV1(p: { config: Config; publicClient: ChainPublicClient }): Promise<Address | undefined> {
  if (p.config.paymentFactoryV1Address !== undefined) {
    return assertPaymentFactory({ publicClient: p.publicClient, address: getAddress(p.config.paymentFactoryV1Address), version: 1, setting: 'PAYMENT_FACTORY_V1_ADDRESS' });
  }
  const fixed = factoryAddress(1);
  const code = await p.publicClient.getCode({ address: fixed });
  return code !== undefined && code !== '0x' ? fixed : undefined;
}

/** A SPLIT_DEPLOYER_KEY on the dev chain is usually not a test account: give it test ETH for gas. */
async function fundWithTestEth(chain: Chain, transport: Transport, publicClient: ChainPublicClient, address: Address): Promise<void> {
  if ((await publicClient.getBalance({ address })) > 0n) return;
  await createTestClient({ chain, transport, mode: 'anvil' }).setBalance({ address, value: parseEther('1000') });
}
