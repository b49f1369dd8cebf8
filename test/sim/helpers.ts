/**
 * A mainnet-shaped simulation for tests and the bench (issue 23, DESIGN.md "A real chain"):
 *
 *   - anvil as chain 8453 (./node.ts) mining a block every 2 seconds, with the test USDC and the
 *     payment-forwarder factory deployed as on the dev chain;
 *   - every block carries 550 foreign `Transfer` logs and 50 real test-USDC transfers between
 *     accounts that are not payment addresses (./traffic.ts), and optionally hours of such history;
 *   - the service reaches the node only through a provider proxy (./proxy.ts) with Infura's and
 *     Alchemy's eth_getLogs limits, latency, a rate limit, a lagging node and 5xx answers;
 *   - a stranger's flood of fake `Transfer` logs, and base-fee spikes, on demand.
 *
 * The service joins it as CHAIN=dev with RPC_URL (the proxy) and USDC_ADDRESS (`sim.env`, or
 * `joinSim` for a test's in-process app), keeping the node's chain id 8453. The tests' own reads
 * and transactions go to the node (`sim.node.url`, `sim.publicClient`), never through the proxy.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createWalletClient, defineChain, encodeFunctionData, http, parseAbi, type Address, type Chain, type Hex } from 'viem';
import { startChain, type ChainDeps, type ChainPublicClient, type ChainWalletClient } from '../../src/chain/client.ts';
import { DEV_ACCOUNT_COUNT, DEV_DEPLOYER_INDEX, devAccount } from '../../src/chain/dev-accounts.ts';
import { devPublicClient } from '../../src/chain/dev-public-client.ts';
import { ensurePaymentFactory } from '../../src/chain/payment-address.ts';
import { ensureTestUsdc } from '../../src/chain/test-usdc-setup.ts';
import { loadConfig } from '../../src/config.ts';
import { testLogger } from '../chain/helpers.ts';
import { simTrafficAbi, simTrafficBytecode } from './contracts.ts';
import { SIM_CHAIN_ID, startSimNode, type SimNode } from './node.ts';
import { MAINNET_PROVIDER, startProviderProxy, type ProviderBehaviour, type ProviderProxy } from './proxy.ts';
import {
  ATTACKER_ACCOUNT,
  floodCall,
  MAINNET_TRAFFIC,
  mineHistory,
  NORMAL_BASE_FEE,
  Sender,
  TRAFFIC_ACCOUNT,
  TrafficGenerator,
  type TrafficOptions,
} from './traffic.ts';

export { MAINNET_PROVIDER, PLAIN_PROVIDER, type ProviderBehaviour, type ProviderProxy, type ProviderStats } from './proxy.ts';
export { MAINNET_TRAFFIC, type TrafficOptions } from './traffic.ts';
export { SIM_CHAIN_ID } from './node.ts';

export const SIM_BLOCK_TIME_SECONDS = 2;
/** Test USDC the traffic contract holds for its transfers: a billion. */
const TRAFFIC_USDC = 1_000_000_000n * 10n ** 6n;
const usdcMintAbi = parseAbi(['function mint(address to, uint256 amount)']);

export interface SimOptions {
  /** Provider behaviours; every one of MAINNET_PROVIDER by default. */
  provider?: Partial<ProviderBehaviour>;
  traffic?: Partial<TrafficOptions>;
  /** Blocks of history mined before the chain runs by itself (2 hours of Base is 3,600). */
  historyBlocks?: number;
  blockTimeSeconds?: number;
  /** The proxy's random choices (lag, latency, 5xx) repeat with the same seed. */
  seed?: number;
}

export interface Sim {
  readonly node: SimNode;
  readonly proxy: ProviderProxy;
  readonly chain: Chain;
  /** Straight to the node: for the tests' own reads. */
  readonly publicClient: ChainPublicClient;
  readonly usdc: Address;
  readonly paymentFactory: Address;
  /** The contract emitting every block's foreign logs and paying its token transfers. */
  readonly spammer: Address;
  /** A stranger's contract, for floods. */
  readonly attacker: Address;
  /** The block the chain started running by itself at (after set-up and history). */
  readonly liveFrom: bigint;
  readonly generator: TrafficGenerator;
  /** The environment that makes the service join the simulation through the proxy. */
  env(): Record<string, string>;
  /** A wallet of dev account `index` (0-8 are buyers) straight on the node. */
  wallet(index: number): ChainWalletClient;
  /** Sends a stranger's `logs` fake Transfer logs into `targets`, spread over `blocks` blocks; resolves once all are mined. */
  flood(targets: Address[], logs: number, blocks: number): Promise<Hex[]>;
  /** Sends `units` of the test USDC to each target in one transaction (from the traffic contract's balance); resolves once mined. */
  scatter(targets: Address[], units: bigint): Promise<Hex>;
  /** Every block's base fee `factor` times the normal one (0.01 gwei) for `ms` milliseconds. */
  spikeBaseFee(factor: number, ms: number): void;
  /** Foreign Transfer logs and test-USDC transfers in one block, as the node has them. */
  blockTraffic(block: bigint): Promise<{ foreignTransfers: number; tokenTransfers: number }>;
  /** Resolves once the node's head is at least `block`. */
  waitForBlock(block: bigint, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

function simChain(url: string): Chain {
  return defineChain({
    id: SIM_CHAIN_ID,
    name: 'Splitline mainnet-shaped simulation',
    nativeCurrency: { decimals: 18, name: 'Ether', symbol: 'ETH' },
    rpcUrls: { default: { http: [url] } },
  });
}

export async function startSim(opts: SimOptions = {}): Promise<Sim> {
  const blockTime = opts.blockTimeSeconds ?? SIM_BLOCK_TIME_SECONDS;
  const history = opts.historyBlocks ?? 0;
  const traffic = { ...MAINNET_TRAFFIC, ...opts.traffic };
  const now = Math.floor(Date.now() / 1000);
  // History ends about now: its first block is `history` block times back, set-up just before.
  const node = await startSimNode(history > 0 ? { genesisTimestamp: now - history * blockTime - 60 } : {});
  const cleanup: (() => Promise<void>)[] = [() => node.stop()];
  const workDir = mkdtempSync(path.join(tmpdir(), 'splitline-sim-'));
  cleanup.push(async () => rmSync(workDir, { recursive: true, force: true }));
  try {
    const chain = simChain(node.url);
    const publicClient = devPublicClient(chain, http(node.url));
    const wallet = (index: number) => createWalletClient({ chain, transport: http(node.url), account: devAccount(index), pollingInterval: 50 }) as ChainWalletClient;
    await node.rpc('evm_setAutomine', [true]);
    await node.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${NORMAL_BASE_FEE.toString(16)}`]);
    const deployer = wallet(DEV_DEPLOYER_INDEX);
    const logger = testLogger();
    const holders = Array.from({ length: DEV_ACCOUNT_COUNT }, (_, i) => devAccount(i).address);
    const usdc = (await ensureTestUsdc({ walletClient: deployer, publicClient, holders, recordPath: path.join(workDir, 'deployment.json'), logger })).address;
    const paymentFactory = await ensurePaymentFactory({ walletClient: deployer, publicClient, logger, version: 2 });
    const deployTraffic = async (index: number): Promise<Address> => {
      const hash = await wallet(index).deployContract({ abi: [], bytecode: simTrafficBytecode() });
      return (await publicClient.waitForTransactionReceipt({ hash })).contractAddress!;
    };
    const spammer = await deployTraffic(TRAFFIC_ACCOUNT);
    const attacker = await deployTraffic(ATTACKER_ACCOUNT);
    const mint = await wallet(TRAFFIC_ACCOUNT).writeContract({ address: usdc, abi: usdcMintAbi, functionName: 'mint', args: [spammer, TRAFFIC_USDC] });
    await publicClient.waitForTransactionReceipt({ hash: mint });
    await node.rpc('evm_setAutomine', [false]);

    const sender = new Sender(node, TRAFFIC_ACCOUNT);
    const blockOptions = { node, sender, spammer, usdc, traffic };
    if (history > 0) await mineHistory({ ...blockOptions, blocks: history, firstTimestamp: now - history * blockTime, blockTimeSeconds: blockTime });
    const liveFrom = (await node.head()) + 1n;
    const generator = new TrafficGenerator({ ...blockOptions, normalBaseFee: NORMAL_BASE_FEE });
    await node.rpc('evm_setIntervalMining', [blockTime]);
    generator.start();
    cleanup.push(async () => generator.stop());

    const proxy = await startProviderProxy({ upstream: node.url, behaviour: { ...MAINNET_PROVIDER, ...opts.provider }, seed: opts.seed });
    cleanup.push(() => proxy.close());
    const attackerSender = new Sender(node, ATTACKER_ACCOUNT);

    const waitForBlock = async (block: bigint, timeoutMs = 60_000) => {
      const end = Date.now() + timeoutMs;
      while ((await node.head()) < block) {
        if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for block ${block}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    let stopping: Promise<void> | undefined;
    return {
      node,
      proxy,
      chain,
      publicClient,
      usdc,
      paymentFactory,
      spammer,
      attacker,
      liveFrom,
      generator,
      // The node's block time: the service polls at it, as on Base (CHAIN_POLL_MS follows it).
      // The service is told the provider's rate limit, as a merchant sets RPC_RATE_LIMIT to their plan's.
      env: () => {
        const limit = proxy.behaviour().rateLimitPerSecond;
        return { CHAIN: 'dev', RPC_URL: proxy.url, USDC_ADDRESS: usdc, PAYMENT_FACTORY_ADDRESS: paymentFactory, DEV_CHAIN_BLOCK_TIME: String(blockTime), ...(limit === null ? {} : { RPC_RATE_LIMIT: String(limit) }) };
      },
      wallet,
      async flood(targets, logs, blocks) {
        const hashes: Hex[] = [];
        const per = Math.ceil(logs / blocks);
        let head = await node.head();
        for (let sent = 0; sent < logs; sent += per) {
          const call = floodCall(targets, Math.min(per, logs - sent), 1_000_000n);
          hashes.push(await attackerSender.send(attacker, call.data, call.gas));
          // One transaction per block.
          await waitForBlock(head + 1n);
          head = await node.head();
        }
        for (const hash of hashes) await publicClient.waitForTransactionReceipt({ hash });
        return hashes;
      },
      async scatter(targets, units) {
        const data = encodeFunctionData({ abi: simTrafficAbi, functionName: 'scatter', args: [usdc, targets, units] });
        const hash = await attackerSender.send(spammer, data, 100_000n + 45_000n * BigInt(targets.length));
        await publicClient.waitForTransactionReceipt({ hash });
        return hash;
      },
      spikeBaseFee: (factor, ms) => generator.spikeBaseFee(factor, ms),
      async blockTraffic(block) {
        const at = `0x${block.toString(16)}`;
        const logs = await node.rpc<{ address: string }[]>('eth_getLogs', [{ fromBlock: at, toBlock: at, topics: [TRANSFER_TOPIC] }]);
        const tokenTransfers = logs.filter((l) => l.address.toLowerCase() === usdc.toLowerCase()).length;
        return { foreignTransfers: logs.length - tokenTransfers, tokenTransfers };
      },
      waitForBlock,
      stop() {
        stopping ??= (async () => {
          for (const step of cleanup.reverse()) await step().catch(() => undefined);
        })();
        return stopping;
      },
    };
  } catch (err) {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    throw err;
  }
}

const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/** The service's chain (src/chain/client.ts) joined to the simulation through its provider proxy. */
export async function joinSim(sim: Sim, env: Record<string, string> = {}): Promise<ChainDeps> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-sim-app-'));
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...sim.env(), ...env });
  const chain = await startChain({ config, logger: testLogger() });
  return {
    ...chain,
    async close() {
      await chain.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
