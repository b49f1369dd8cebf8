/**
 * What fills the simulation's blocks, sent straight to the node (never through the provider):
 *
 *   - every block: `spamPerBlock` foreign `Transfer` logs (SimTraffic.spam) and `tokenTransfersPerBlock`
 *     real transfers of the test USDC to pseudo-random accounts (SimTraffic.pay), both sent as soon
 *     as the previous block appears, from the simulation's own account;
 *   - history: blocks mined one by one with that traffic and 2-second timestamps, before the chain
 *     starts to run by itself;
 *   - a stranger's flood: fake `Transfer` logs into chosen addresses over a few blocks;
 *   - the base fee: every block's is set (anvil_setNextBlockBaseFeePerGas), the normal one or a
 *     spike of `factor` times it while a spike lasts.
 */
import { encodeFunctionData, type Address, type Hex } from 'viem';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { simTrafficAbi } from './contracts.ts';
import type { SimNode } from './node.ts';

/** The simulation's own accounts (funded by the node, unknown to the service and its tests). */
export const TRAFFIC_ACCOUNT = 12;
export const ATTACKER_ACCOUNT = 14;
/** Base's base fee on a quiet day is about this: 0.01 gwei. */
export const NORMAL_BASE_FEE = 10_000_000n;
/** Generous fees for the simulation's own transactions: they always make it into the next block. */
const TRAFFIC_MAX_FEE = 10_000_000_000_000n;
const TRAFFIC_TIP = 1_000_000n;
/** Gas per log emitted, per token transfer, with margin (SimTraffic, optimised). */
const GAS_PER_LOG = 3_000n;
const GAS_PER_TRANSFER = 40_000n;
const GAS_BASE = 100_000n;
const POLL_MS = 100;

export interface TrafficOptions {
  spamPerBlock: number;
  tokenTransfersPerBlock: number;
}

export const MAINNET_TRAFFIC: TrafficOptions = { spamPerBlock: 550, tokenTransfersPerBlock: 50 };

/**
 * A sender that keeps its own nonce and lets the node sign (the node's own funded accounts are
 * unlocked; signing in JavaScript costs ~30 ms a transaction): one RPC call per transaction.
 */
export class Sender {
  /** The account's pending nonce when counting began, and how many were handed out since. */
  private base: Promise<number> | undefined;
  private handedOut = 0;
  readonly address: Address;

  constructor(
    private readonly node: SimNode,
    accountIndex: number,
  ) {
    this.address = devAccount(accountIndex).address;
  }

  async send(to: Address, data: Hex, gas: bigint): Promise<Hex> {
    this.base ??= this.node.rpc<string>('eth_getTransactionCount', [this.address, 'pending']).then((n) => Number(BigInt(n)));
    const base = this.base;
    const k = this.handedOut++;
    const nonce = (await base) + k;
    try {
      return await this.node.rpc<Hex>('eth_sendTransaction', [
        { from: this.address, to, data, gas: hex(gas), nonce: hex(BigInt(nonce)), maxFeePerGas: hex(TRAFFIC_MAX_FEE), maxPriorityFeePerGas: hex(TRAFFIC_TIP) },
      ]);
    } catch (err) {
      // Count afresh from the node next time rather than leave a gap.
      if (this.base === base) {
        this.base = undefined;
        this.handedOut = 0;
      }
      throw err;
    }
  }
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

export function spamCall(n: number, seed: bigint): { data: Hex; gas: bigint } {
  return { data: encodeFunctionData({ abi: simTrafficAbi, functionName: 'spam', args: [BigInt(n), seed] }), gas: GAS_BASE + GAS_PER_LOG * BigInt(n) };
}

export function payCall(token: Address, n: number, seed: bigint): { data: Hex; gas: bigint } {
  return { data: encodeFunctionData({ abi: simTrafficAbi, functionName: 'pay', args: [token, BigInt(n), seed] }), gas: GAS_BASE + GAS_PER_TRANSFER * BigInt(n) };
}

export function floodCall(targets: Address[], n: number, value: bigint): { data: Hex; gas: bigint } {
  return {
    data: encodeFunctionData({ abi: simTrafficAbi, functionName: 'flood', args: [targets, BigInt(n), value] }),
    gas: GAS_BASE + (GAS_PER_LOG + 200n) * BigInt(n),
  };
}

export interface BlockTrafficOptions {
  node: SimNode;
  sender: Sender;
  spammer: Address;
  usdc: Address;
  traffic: TrafficOptions;
}

/** Sends one block's worth of traffic (it lands in the next block the node mines). */
export async function sendBlockTraffic(o: BlockTrafficOptions, seed: bigint): Promise<void> {
  const calls = [
    ...(o.traffic.spamPerBlock > 0 ? [spamCall(o.traffic.spamPerBlock, seed)] : []),
    ...(o.traffic.tokenTransfersPerBlock > 0 ? [payCall(o.usdc, o.traffic.tokenTransfersPerBlock, seed)] : []),
  ];
  // Both at once: the sender numbers them, and the node orders a sender's transactions by nonce.
  await Promise.all(calls.map((c) => o.sender.send(o.spammer, c.data, c.gas)));
}

/**
 * Mines `blocks` blocks of traffic one by one, 2 seconds apart from `firstTimestamp`, on a node
 * that does not mine by itself. Returns the last block's number.
 */
export async function mineHistory(o: BlockTrafficOptions & { blocks: number; firstTimestamp: number; blockTimeSeconds: number }): Promise<bigint> {
  for (let i = 0; i < o.blocks; i++) {
    await sendBlockTraffic(o, BigInt(i) + 1_000_000n);
    await o.node.rpc('evm_mine', [{ timestamp: o.firstTimestamp + i * o.blockTimeSeconds, blocks: 1 }]);
  }
  return o.node.head();
}

/**
 * Follows the running chain: after every new block, the next block's traffic and base fee. Errors
 * are kept (`errors`) rather than thrown, so one bad moment does not stop the chain's life.
 */
export class TrafficGenerator {
  private timer: NodeJS.Timeout | undefined;
  private last = -1n;
  private busy = false;
  private spike: { factor: bigint; until: number } | undefined;
  readonly errors: unknown[] = [];
  /** Blocks whose traffic was sent by this generator. */
  blocksFed = 0;

  constructor(private readonly o: BlockTrafficOptions & { normalBaseFee: bigint }) {}

  start(): void {
    this.timer ??= setInterval(() => void this.tick(), POLL_MS);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Every block's base fee is `factor` times the normal one for the next `ms` milliseconds. */
  spikeBaseFee(factor: number, ms: number): void {
    this.spike = { factor: BigInt(factor), until: Date.now() + ms };
  }

  baseFeeNow(): bigint {
    const s = this.spike;
    return s !== undefined && Date.now() < s.until ? this.o.normalBaseFee * s.factor : this.o.normalBaseFee;
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const head = await this.o.node.head();
      if (head === this.last) return;
      this.last = head;
      await this.o.node.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${this.baseFeeNow().toString(16)}`]);
      await sendBlockTraffic(this.o, head);
      this.blocksFed++;
    } catch (err) {
      this.errors.push(err);
    } finally {
      this.busy = false;
    }
  }
}
