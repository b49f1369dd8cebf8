/**
 * Reads the chain block by block and records what concerns the service:
 *
 *   Transfer of the token into a receipt's payment address    → receipt_transfers 'in'
 *   Transfer of the token out of a payment address into its split (sweep)
 *                                                              → receipt_transfers 'sweep'
 *                                                                + a split transaction of that receipt
 *   Transfer of the token straight into a split                → a split transaction, receiptId null
 *   ERC20PaymentReleased of the token out of a known split      → a split transaction (release)
 *
 * Zero-value transfers are never recorded: they move no money, so they never count as an arrival,
 * never name a payer and never hold a receipt short of its depth.
 *
 * **What is asked.** Every eth_getLogs names its contracts: the token (chain.usdc) and the split
 * contracts of split_versions (every version of every split), SPLIT_ADDRESSES_PER_CALL at a time, with topic0 one of Transfer and
 * ERC20PaymentReleased. What strangers put on the chain (another contract's Transfer logs, 48,000
 * of them in one block) is never downloaded. The `to` topic is not filtered: the addresses whose
 * money matters are every payment address ever issued (late money, top-ups and sweeps of closed
 * receipts are credited) and every split, a list that grows without bound while provider limits
 * on topic lists and request size do not; a provider charges an eth_getLogs the same whatever
 * its filter, so filtering by `to` would only save bytes of the token's own traffic, at the price
 * of more calls per block as the list grows. The logs are matched against stored addresses with
 * one indexed query.
 *
 * **Proof of coverage.** A load-balanced provider sends each request to any of its nodes, and a
 * node a few blocks behind answers eth_getLogs over [from, to] silently cut at its own head. So a
 * block is recorded only when its logs are known complete:
 *
 *   - Near the head (the newest `horizon` blocks), one new block is read pinned: its header (the
 *     pass's `latest`, or by number), then eth_getLogs({blockHash}) of that header's hash. A node
 *     that does not have that block answers an error (EIP-234), never a short list, and a header
 *     the node does not have is null. While a receipt waits for money or depth, the logs are
 *     asked again at once, twice at most (the next request usually reaches a node that has the block:
 *     src/chain/lagging-nodes.ts), so one lagging answer costs a call, not a block time of that
 *     payment's wait. A miss with nobody waiting, a third miss, or a null header ends the pass with
 *     nothing recorded or withdrawn, and the next poll reads the block again.
 *   - Several new blocks (a poll missed one, or a read met a lagging node), when the worker polls
 *     at the block time (lagPauseMs), on a chain whose blocks carry logs of the filter (the token moves in every block on Base): their headers, linked parent
 *     to child, then one eth_getLogs over the whole range, which proves itself up to the newest block
 *     holding one of its logs with that block's hash (a node that has block k answers every block up
 *     to k); that much is recorded and the rest read next pass. When no log proves anything (a node
 *     far behind, or a quiet chain), the next pass reads block by block, pinned.
 *   - Deeper than `horizon` blocks below the newest head seen (64 by default: every node of a
 *     healthy provider is within a few blocks of the head), blocks are read by range, for catch-up
 *     after a pause. The range's last header is then fetched: null ends the pass, and a log of that
 *     block with another hash means the range changed while it was read: nothing is recorded.

 * **Reorganisations.** The hash of every block read near the head is kept for REORG_WINDOW blocks
 * (and the last block of every range). Each pass begins with one call, the newest header
 * (`latest`): when its number and hash are what was read last, the pass ends there. A header whose
 * parent hash is not the hash recorded for the block before it, or a `latest` at a recorded
 * height with another hash, shows another chain: the newest recorded block that the node still
 * has is found (header by header, newest first), every row from above it is withdrawn, and those
 * blocks are read again (and refunds whose transfer they held are read again: src/payments/refund-proofs.ts). A node that answers null for a block (it is behind) is never taken for
 * a reorganisation: the pass ends and withdraws nothing; nor is a walk whose first block turns out
 * to be the recorded one after all (two nodes answered from two views). A `latest` below the newest block read
 * is a lagging node unless it names another hash for a recorded block.
 *
 * **Refusals.** A provider may refuse an eth_getLogs answer (-32005 "more than 10000 results",
 * Alchemy's "Log response size exceeded ... this block range should work: [0x.., 0x..]", a block
 * range too large, HTTP 413, viem's ResponseBodyTooLargeError). The range is then split: to the
 * provider's suggested range when the refusal names one, otherwise in half, down to one block.
 * The range size that worked is remembered and grows back slowly. A one-block read that is still
 * refused ends the pass (logged, `stopped` in the result): it is read again next pass, never
 * skipped, and the worker's other work goes on.
 *
 * **Passing failures and rate limits.** While a receipt waits, a load balancer's 5xx (or a 408) on
 * an eth_getLogs is asked once more after PASSING_FAILURE_PAUSE_MS; a second failure in a row fails
 * the pass, so an outage is not hammered. Without the re-ask, one 503 (about one request in a
 * hundred on a hosted provider) failed the pass and the worker backed off two block times: the
 * steps in the mainnet bench's payment latency. Idle, nobody waits: the pass fails as before and
 * the next reads the blocks with one range, which costs fewer calls than asking again. A rate
 * limit (HTTP 429) is neither asked again nor split: it ends the pass cleanly (`stopped`), and the
 * blocks are read at the next poll, when the limit has room again. Asking at once would spend the limit that other reads of the pass (early money's balance
 * reads, the sweeper) need, and Infura's 429 carries -32005, so taking it for a size refusal split
 * the range into more calls under the very limit.
 *
 * **Cost.** A pass makes at most `callsPerPass` eth_getLogs calls, so catching up never starves
 * settling, expiry and new blocks; the worker runs the next pass at once while behind. At the head
 * a pass costs one header for `latest`, and then one eth_getLogs (plus one header per further new
 * block) when the head moved: about 80 Alchemy compute units per 2-second block, against 116 for
 * 5 M a day. When the head has not moved, or a lagging node names an older head, the pass makes
 * that one call. A node behind that fails a read costs that call and nothing more: the blocks are
 * read at the next poll, with one range. The worker polls at the block time (src/payments/worker.ts).
 * Calls are counted per method (rpcCalls) for the bench's compute units (src/chain/compute-units.ts).

 * **Where to start.** An empty cursor starts at the block before the oldest receipt that still
 * waits for money (found by timestamp, 10 minutes early for clock differences), or at the head when
 * there is none: a fresh install reads nothing of the past.
 */
import { setTimeout as pause } from 'node:timers/promises';
import { and, desc, eq, gt, inArray, isNotNull, lt, min, sql } from 'drizzle-orm';
import { decodeEventLog, getAbiItem, ResponseBodyTooLargeError, toEventSelector, type Hex } from 'viem';
import { erc20Abi } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import { fromAnyNode, isRateLimited, isRpcAnswer, isServerFailure, LAG_RETRIES } from '../chain/lagging-nodes.ts';
import { paymentSplitterAbi } from '../chain/split-contract.ts';
import type { Db, Tx } from '../db/client.ts';
import { chainBlocks, chainCursors, receiptCanExpire, receipts, receiptTransfers, splitTransactions, splitVersions, sweeps } from '../db/schema.ts';
import { applyCumulativeFees, recordSplitTransaction } from '../domain/split-transactions.ts';
import { forgetRefundBlocks } from './refund-proofs.ts';
import { watch } from './watch.ts';

export const CURSOR = 'payments';
const TRANSFER = getAbiItem({ abi: erc20Abi, name: 'Transfer' });
const RELEASED = getAbiItem({ abi: paymentSplitterAbi, name: 'ERC20PaymentReleased' });
const TRANSFER_TOPIC = toEventSelector(TRANSFER);
const RELEASED_TOPIC = toEventSelector(RELEASED);
/** Block hashes kept, counted back from the newest read: far deeper than any confirmation depth. */
export const REORG_WINDOW = 1024n;
/** Contract addresses named in one eth_getLogs filter. */
export const SPLIT_ADDRESSES_PER_CALL = 500;
/** How much earlier than a receipt's creation an empty cursor starts, for clock differences. */
const START_SLACK_SECONDS = 600n;
/**
 * How far past one block time a `latest` header's timestamp may be before it counts as a node
 * behind's (head()): timestamps are whole seconds, and a block reaches the provider's nodes a
 * moment after it is made.
 */
const STALE_SLACK_MS = 1_500;
/** Blocks an empty cursor's start may lie before the best one: the search stops there. */
const START_PRECISION = 16n;

export interface ScanLimits {
  /** Largest block range of one eth_getLogs (RPC_LOGS_MAX_RANGE). */
  maxRange: bigint;
  /** Blocks below the head read one by one, pinned to their hash (RPC_LAG_HORIZON_BLOCKS). */
  horizon: bigint;
  /** eth_getLogs calls one pass may make (RPC_LOGS_CALLS_PER_PASS). */
  callsPerPass: number;
}

export const DEFAULT_SCAN_LIMITS: ScanLimits = { maxRange: 2000n, horizon: 64n, callsPerPass: 32 };

export interface ScannerOptions {
  db: Db;
  chain: ChainDeps;
  logger: Logger;
  platformRecipient: string | undefined;
  /** Where to start on an empty cursor; by default the oldest receipt waiting for money, or the head. */
  startBlock?: bigint;
  limits?: Partial<ScanLimits>;
  /** Seconds per block, for the first guess of the block at a time (it is then checked). */
  blockTimeSeconds?: number;
  /**
   * After a pass ended on a node behind (a header it lacks, logs it could not give), how long the
   * blocks up to that head are left unread unless a newer head comes: the block time when the
   * worker polls at it, 0 (read again at once) on a dev chain that mines per transaction. Only
   * with a pause are several new blocks read with one range (readRecent): on a dev chain every
   * pass reads each new block pinned, up to the head.
   */
  lagPauseMs?: number;
}

export interface ReceiptKey {
  wallet: string;
  receiptId: string;
}

export interface ScanResult {
  /** The newest block read (the cursor): depth is counted from it. */
  head: bigint;
  /** The newest head the node named this pass, and its timestamp (Unix ms). */
  chainHead: bigint;
  chainHeadTime: number;
  /** Receipts whose transfers changed (new ones recorded, or withdrawn by a reorganisation). */
  touched: ReceiptKey[];
  /** Receipts whose transfers a reorganisation withdrew. */
  withdrawn: ReceiptKey[];
  /** True when blocks up to chainHead remain to be read: the worker runs the next pass at once. */
  behind: boolean;
  /** Why the pass stopped before chainHead, when it did (a lagging node, a refused block). */
  stopped: string | null;
  /** RPC calls this pass made. */
  rpcCalls: number;
}

export interface Header {
  number: bigint;
  hash: string;
  parentHash: string;
  /** Unix ms. */
  timestamp: number;
  /** The block's base fee (wei), when the chain has one: the sweeper's fees come from it. */
  baseFee?: bigint;
}

interface RawLog {
  address: Hex;
  topics: [Hex, ...Hex[]];
  data: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: Hex;
  blockTimestamp?: Hex;
}

interface ChainLog {
  address: string;
  blockNumber: bigint;
  blockHash: string;
  transactionHash: string;
  logIndex: number;
  /** Unix ms when the node sent it with the log. */
  timestamp: number | undefined;
  event: { kind: 'transfer'; from: string; to: string; value: bigint } | { kind: 'release'; token: string; to: string; amount: bigint };
}

/** Ends a pass without recording or withdrawing anything; the work is taken up again next pass. */
class PassStop extends Error {}
/** A PassStop because the provider refused an answer's size (not a node behind). */
class Refused extends PassStop {}
/** A PassStop because the provider's rate limit refused a call: the blocks wait for the next poll. */
class RateLimited extends PassStop {}

export class PaymentScanner {
  /** Every RPC call this scanner made, per method, since it was made. */
  readonly rpcCalls: Record<string, number> = {};
  /** Reorganisations followed (blocks withdrawn and read again) since this scanner was made. */
  reorganisations = 0;
  /** The first block read on what was an empty cursor, when this scanner chose it. */
  startedAt: bigint | undefined;
  /** The newest head any answer named (a lagging node's older one never replaces it). */
  newest: Header | undefined;
  /**
   * Whether the newest blocks read carried logs of the filter: then several new blocks are read
   * with one eth_getLogs range whose own logs prove how far it reached (see readRecent); on a
   * quiet chain each block is read pinned to its hash instead.
   */
  private busy = true;
  /** A pass ended on a node behind at this head: nothing up to it is read again before `until` (lagPauseMs). */
  private lagged: { head: bigint; until: number } | undefined;
  private passCalls = 0;
  /** Whether this pass reads for a receipt that waits (money or depth): only then is a server's failure asked again. */
  private awaitedPass = true;
  private readonly limits: ScanLimits;
  /** The range size that last worked; halves on a refusal, grows back after RANGE_GROWTH successes. */
  private range: bigint;
  private rangeSuccesses = 0;

  constructor(private readonly o: ScannerOptions) {
    this.limits = { ...DEFAULT_SCAN_LIMITS, ...o.limits };
    this.range = this.limits.maxRange;
  }

  /** The range size eth_getLogs uses now (adapted to the provider's refusals). */
  get rangeSize(): bigint {
    return this.range;
  }

  /**
   * The node's newest header: the one call of a pass when nothing is new. Taken before the
   * worker stores new payment addresses, so a payment in a block up to it went to an address
   * whose receipt was committed before and is then stored.
   *
   * A node behind answers its own older head: a block older than one already seen, or, on a chain
   * that makes a block every block time (lagPauseMs), one whose timestamp is over a block time and
   * STALE_SLACK_MS old, when the chain has made another since (block timestamps follow the wall
   * clock to the second; the poll's timing relies on that too).
   * While a receipt waits (`awaited`), such an answer is asked again at once, LAG_RETRIES times at
   * most, and the newest answer is taken: the next request usually reaches a node at the head.
   * Before, three such answers in a row (one pass in 40 with 30% of answers from a node behind)
   * left the passes a block time apart seeing no new block, and a payment waited 6 s for nothing.
   * Idle, nobody waits, and the next poll asks.
   */
  async head(awaited = false): Promise<Header> {
    this.passCalls = 0;
    let latest = await this.header('latest');
    if (latest === null) throw new Error('the node has no latest block');
    for (let i = 0; awaited && i < LAG_RETRIES && this.stale(latest); i++) {
      const again = await this.header('latest');
      if (again !== null && again.number > latest.number) latest = again;
    }
    if (this.newest === undefined || latest.number > this.newest.number || (latest.number === this.newest.number && latest.hash !== this.newest.hash)) {
      this.newest = latest;
    }
    return latest;
  }

  /** Whether `latest` is likely a node behind's head (head()). */
  private stale(latest: Header): boolean {
    if (this.newest !== undefined && latest.number < this.newest.number) return true;
    const blockSeconds = this.o.blockTimeSeconds;
    if ((this.o.lagPauseMs ?? 0) <= 0 || blockSeconds === undefined) return false;
    return Date.now() - latest.timestamp > blockSeconds * 1000 + STALE_SLACK_MS;
  }

  /**
   * Reads what is new up to `latest` (from head()), within this pass's budget. `awaited`: a
   * receipt waits for money or depth, so a block a lagging node lacks is asked for again at once.
   */
  async pass(latest: Header, awaited = true): Promise<ScanResult> {
    const touched = new Map<string, ReceiptKey>();
    const withdrawn: ReceiptKey[] = [];
    let stopped: string | null = null;
    this.awaitedPass = awaited;
    let cursor = (await this.cursor()) ?? (await this.startCursor(latest));
    try {
      if (latest.number <= cursor) {
        // The head has not moved, or this node is behind: one call, unless it names another hash for a recorded block.
        const known = await this.knownHash(latest.number);
        if (known !== undefined && known !== latest.hash) {
          cursor = await this.reorganise(latest.number, withdrawn);
        }
      }
      if (!awaited && this.lagged !== undefined && latest.number <= this.lagged.head && Date.now() < this.lagged.until) {
        // The blocks that met a node behind wait for the next poll, with what arrives by then
        // (unless a receipt waits: then they are asked for again, as the pass's re-asks are).
        throw new PassStop(`block ${cursor + 1n}: a node behind answered last pass; read at the next block`);
      }
      this.lagged = undefined;
      let calls = 0;
      const rangeEnd = latest.number - this.limits.horizon;
      while (cursor < rangeEnd && calls < this.limits.callsPerPass) {
        const read = await this.readRange(cursor + 1n, rangeEnd, this.limits.callsPerPass - calls);
        calls += read.calls;
        for (const r of read.touched) touched.set(keyOf(r), r);
        if (read.to === null) break;
        cursor = read.to;
      }
      // While a receipt waits, a `latest` from a node behind does not stop the pass short of the
      // newest head seen: the blocks up to it are read by number, each header asked of any node.
      const end = awaited && this.newest !== undefined && this.newest.number > latest.number ? this.newest.number : latest.number;
      while (cursor < end && calls < this.limits.callsPerPass) {
        if (latest.number - cursor >= 2n && this.busy && (this.o.lagPauseMs ?? 0) > 0) {
          // Several new blocks (a poll missed one, or a read failed on a lagging node): one call.
          const read = await this.readRecent(cursor, latest);
          if (read === 'reorganised') {
            cursor = await this.reorganise(cursor, withdrawn);
            calls++;
            continue;
          }
          calls += read.calls;
          for (const r of read.touched) touched.set(keyOf(r), r);
          if (read.to === null) continue;
          if (read.to === cursor) {
            // No log proved any block: a node behind answered, or the chain went quiet. The next
            // pass reads block by block, pinned, which needs no logs to prove anything.
            this.busy = false;
            throw new PassStop(`blocks ${cursor + 1n}-${latest.number}: the answer proved none of them; read next pass`);
          }
          cursor = read.to;
          if (cursor < latest.number) throw new PassStop(`blocks ${cursor + 1n}-${latest.number}: the answer stopped short (a node behind); read next pass`);
          continue;
        }
        const n = cursor + 1n;
        const header = n === latest.number ? latest : awaited ? await this.headerFromAnyNode(n) : await this.header(n);
        if (header === null) throw new PassStop(`block ${n}: the node does not have it yet`);
        const parent = await this.knownHash(n - 1n);
        if (parent !== undefined && parent !== header.parentHash) {
          cursor = await this.reorganise(n - 1n, withdrawn);
          calls++;
          continue;
        }
        const read = await this.readPinned(header, awaited ? PINNED_LOG_RETRIES : 0);
        calls += read.calls;
        this.busy = read.logs > 0;
        for (const r of read.touched) touched.set(keyOf(r), r);
        cursor = n;
      }
    } catch (err) {
      if (!(err instanceof PassStop)) throw err;
      stopped = err.message;
      if (!(err instanceof Refused) && this.lagged === undefined && (this.o.lagPauseMs ?? 0) > 0) {
        this.lagged = { head: latest.number, until: Date.now() + this.o.lagPauseMs! };
      }
      this.o.logger.info({ reason: err.message }, 'chain scan: pass ended early; the rest is read next pass');
    } finally {
      for (const r of withdrawn) touched.set(keyOf(r), r);
    }
    await this.o.db.delete(chainBlocks).where(and(eq(chainBlocks.cursor, CURSOR), lt(chainBlocks.number, cursor - REORG_WINDOW)));
    const newest = this.newest !== undefined && this.newest.number > latest.number ? this.newest : latest;
    return {
      head: cursor,
      chainHead: newest.number,
      chainHeadTime: newest.timestamp,
      touched: [...touched.values()],
      withdrawn,
      behind: stopped === null && cursor < latest.number,
      stopped,
      rpcCalls: this.passCalls,
    };
  }

  /** A raw JSON-RPC call, counted per method. */
  private async request<T>(method: string, params: unknown[], retry = true): Promise<T> {
    this.rpcCalls[method] = (this.rpcCalls[method] ?? 0) + 1;
    this.passCalls++;
    const answer: unknown = await this.o.chain.publicClient.request({ method: method as never, params: params as never }, retry ? undefined : { retryCount: 0 });
    return answer as T;
  }

  private async header(block: bigint | 'latest'): Promise<Header | null> {
    const raw = await this.request<{ number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex; baseFeePerGas?: Hex | null } | null>('eth_getBlockByNumber', [
      block === 'latest' ? 'latest' : `0x${block.toString(16)}`,
      false,
    ]);
    if (raw === null || raw.hash === null) return null;
    return {
      number: BigInt(raw.number),
      hash: raw.hash.toLowerCase(),
      parentHash: raw.parentHash.toLowerCase(),
      timestamp: Number(BigInt(raw.timestamp)) * 1000,
      baseFee: raw.baseFeePerGas == null ? undefined : BigInt(raw.baseFeePerGas),
    };
  }

  private async cursor(): Promise<bigint | null> {
    const [row] = await this.o.db.select({ block: chainCursors.block }).from(chainCursors).where(eq(chainCursors.name, CURSOR));
    return row?.block ?? null;
  }

  private async knownHash(number: bigint): Promise<string | undefined> {
    const [row] = await this.o.db
      .select({ hash: chainBlocks.hash })
      .from(chainBlocks)
      .where(and(eq(chainBlocks.cursor, CURSOR), eq(chainBlocks.number, number)));
    return row?.hash;
  }

  /** Stores the cursor just before the first block to read (startBlock). */
  private async startCursor(latest: Header): Promise<bigint> {
    this.startedAt = await this.startBlock(latest);
    const cursor = this.startedAt - 1n;
    await this.o.db.transaction((tx) => this.moveCursor(tx, cursor));
    this.o.logger.info({ block: cursor + 1n }, 'chain scan: first block to read');
    return cursor;
  }

  /**
   * The first block to read on an empty cursor: the configured one, else a block no later than
   * the oldest receipt still waiting for money was created, else the head.
   */
  private async startBlock(latest: Header): Promise<bigint> {
    if (this.o.startBlock !== undefined) return this.o.startBlock;
    const [oldest] = await this.o.db
      .select({ at: min(receipts.createdAt) })
      .from(receipts)
      .where(and(isNotNull(receipts.payAddress), receiptCanExpire(receipts)));
    if (oldest?.at == null) return latest.number;
    const target = BigInt(Math.floor(oldest.at / 1000)) - START_SLACK_SECONDS;
    return this.blockAtOrBefore(latest, target);
  }

  /**
   * A block whose timestamp is at or before `seconds`, within START_PRECISION blocks of the last
   * such block: a guess from the block time, steps back that double until one is early enough,
   * then halving between the two (block timestamps never decrease). A few headers, once.
   */
  private async blockAtOrBefore(latest: Header, seconds: bigint): Promise<bigint> {
    const timeOf = async (n: bigint): Promise<bigint> => {
      const h = await this.header(n);
      // A node without an old block is broken rather than behind: the pass fails and is retried.
      if (h === null) throw new Error(`block ${n}: the node does not have it`);
      return BigInt(h.timestamp / 1000);
    };
    if (BigInt(latest.timestamp / 1000) <= seconds) return latest.number;
    const perBlock = BigInt(Math.max(1, this.o.blockTimeSeconds ?? 2));
    let hi = latest.number;
    let step = (BigInt(latest.timestamp / 1000) - seconds + perBlock - 1n) / perBlock;
    let lo = hi > step ? hi - step : 0n;
    while (lo > 0n && (await timeOf(lo)) > seconds) {
      hi = lo;
      step *= 2n;
      lo = hi > step ? hi - step : 0n;
    }
    while (hi - lo > START_PRECISION) {
      const mid = (lo + hi) / 2n;
      if ((await timeOf(mid)) <= seconds) lo = mid;
      else hi = mid;
    }
    return lo;
  }

  /** The contracts whose logs are read: the token first, then every known split (every version of every merchant's). */
  private async filterAddresses(): Promise<{ batches: string[][]; splits: Map<string, { wallet: string; platformBps: number }> }> {
    const rows = await this.o.db
      .select({ wallet: splitVersions.wallet, address: splitVersions.address, recipients: splitVersions.recipients })
      .from(splitVersions)
      .where(isNotNull(splitVersions.address));
    const platform = this.o.platformRecipient?.toLowerCase();
    const splits = new Map(
      rows.map((r) => [
        r.address!.toLowerCase(),
        { wallet: r.wallet, platformBps: r.recipients.find((x) => x.address.toLowerCase() === platform)?.sharesBps ?? 0 },
      ]),
    );
    const all = [this.o.chain.usdc.address.toLowerCase(), ...splits.keys()];
    const batches: string[][] = [];
    for (let i = 0; i < all.length; i += SPLIT_ADDRESSES_PER_CALL) batches.push(all.slice(i, i + SPLIT_ADDRESSES_PER_CALL));
    return { batches, splits };
  }

  private async getLogs(filter: { blockHash: string } | { fromBlock: bigint; toBlock: bigint }, addresses: string[]): Promise<RawLog[]> {
    const where =
      'blockHash' in filter ? { blockHash: filter.blockHash } : { fromBlock: `0x${filter.fromBlock.toString(16)}`, toBlock: `0x${filter.toBlock.toString(16)}` };
    const ask = () => this.request<RawLog[]>('eth_getLogs', [{ ...where, address: addresses, topics: [[TRANSFER_TOPIC, RELEASED_TOPIC]] }], false);
    // No transport retries: a refusal is answered by splitting the range, a rate limit by the next
    // poll, and a server's passing failure by one re-ask here (the module comment).
    try {
      return await ask();
    } catch (first) {
      if (isRateLimited(first)) throw rateLimited(filter, first);
      if (!isServerFailure(first) || !this.awaitedPass) throw first;
      this.o.logger.debug({ err: shortMessage(first) }, 'eth_getLogs failed in passing: asked once more');
      await pause(PASSING_FAILURE_PAUSE_MS);
      try {
        return await ask();
      } catch (second) {
        throw isRateLimited(second) ? rateLimited(filter, second) : second;
      }
    }
  }

  /**
   * A header by number, asked again (up to LAG_RETRIES times) while the answer is null: behind a
   * load balancer the next request usually reaches a node that has the block. The walk back of a
   * reorganisation asks so, and reading new blocks while a receipt waits; idle, a new block is
   * asked once and a null left to the next poll.
   */
  private async headerFromAnyNode(n: bigint): Promise<Header | null> {
    for (let i = 0; ; i++) {
      const h = await this.header(n);
      if (h !== null || i >= LAG_RETRIES) return h;
    }
  }

  /** One block near the head, pinned to its hash: a node without it errs instead of answering short. */
  private async readPinned(header: Header, retries: number): Promise<{ touched: ReceiptKey[]; calls: number; logs: number }> {
    const { batches, splits } = await this.filterAddresses();
    const raw: RawLog[] = [];
    for (const batch of batches) {
      try {
        // A node that does not have the block (it is behind) is asked again at once while a
        // receipt waits; otherwise, or after a second miss, the block waits for the next poll.
        raw.push(...(await fromAnyNode(() => this.getLogs({ blockHash: header.hash }, batch), retries)));
      } catch (err) {
        if (refusal(err) !== null) throw new Refused(`block ${header.number}: the provider refused its logs (${shortMessage(err)}); read again next pass`);
        // An unknown block (a node behind, or the block left the chain meanwhile): next pass decides.
        // A transport failure (HTTP error, timeout) fails the pass as any other call's would.
        if (!isRpcAnswer(err)) throw err;
        throw new PassStop(`block ${header.number}: logs not read (${shortMessage(err)})`);
      }
    }
    const logs = decodeLogs(raw);
    for (const l of logs) {
      if (l.blockHash !== header.hash) throw new PassStop(`block ${header.number}: a log of another block hash; read again next pass`);
    }
    const touched = await this.record(logs, splits, new Map([[header.number, header]]), header.number);
    return { touched, calls: batches.length, logs: raw.length };
  }

  /**
   * The new blocks after `cursor` up to `latest` with one eth_getLogs range, on a busy chain. A
   * node behind answers such a range cut at its head, silently; so the answer proves only what
   * its own logs show: every log's block hash must be the hash of that block's header (read here,
   * linked parent to child from the recorded block to `latest`), and a node that answered a log of
   * block k has every block up to k, so the range is complete up to the newest block holding one
   * of its logs. That much is recorded (`to`; `cursor` when nothing was proven); the rest is read
   * next pass. On a chain where the token moves in every block (Base's USDC), this costs one header
   * per block besides `latest` and one eth_getLogs per pass however many blocks it covers.
   * 'reorganised' when the first new block's parent is not the recorded block; `to` null after a
   * refusal (the loop then reads block by block).
   */
  private async readRecent(cursor: bigint, latest: Header): Promise<'reorganised' | { to: bigint | null; touched: ReceiptKey[]; calls: number }> {
    const { batches, splits } = await this.filterAddresses();
    if (batches.length !== 1) {
      // A proof per batch would need a log in every batch's answer: split contracts rarely have one.
      this.busy = false;
      return { to: null, touched: [], calls: 0 };
    }
    const headers = new Map<bigint, Header>([[latest.number, latest]]);
    const recorded = await this.knownHash(cursor);
    for (let n = cursor + 1n; n < latest.number; n++) {
      // While a receipt waits, a header a node behind lacks is asked of another node, as the
      // pinned reads are: ending the pass there held a bench payment 10 s (three passes in a row).
      const h = this.awaitedPass ? await this.headerFromAnyNode(n) : await this.header(n);
      if (h === null) throw new PassStop(`block ${n}: the node does not have it yet`);
      if (n === cursor + 1n && recorded !== undefined && h.parentHash !== recorded) return 'reorganised';
      if (n > cursor + 1n && h.parentHash !== headers.get(n - 1n)!.hash) throw new PassStop(`block ${n}: the node's answers disagree; read again next pass`);
      headers.set(n, h);
    }
    if (latest.parentHash !== headers.get(latest.number - 1n)!.hash) throw new PassStop(`block ${latest.number}: the node's answers disagree; read again next pass`);
    let raw: RawLog[];
    try {
      raw = await this.getLogs({ fromBlock: cursor + 1n, toBlock: latest.number }, batches[0]!);
    } catch (err) {
      if (refusal(err) === null) throw err;
      this.busy = false;
      return { to: null, touched: [], calls: 1 };
    }
    const logs = decodeLogs(raw);
    let to = cursor;
    for (const l of logs) {
      if (l.blockHash !== headers.get(l.blockNumber)?.hash) throw new PassStop(`block ${l.blockNumber}: a log of another block hash; read again next pass`);
      if (l.blockNumber > to) to = l.blockNumber;
    }
    // An undecodable log of the filter (another layout) proves its block as well.
    for (const r of raw) {
      const n = BigInt(r.blockNumber);
      if (n > to && r.blockHash.toLowerCase() === headers.get(n)?.hash) to = n;
    }
    if (to === cursor) return { to, touched: [], calls: 1 };
    const touched = await this.record(
      logs.filter((l) => l.blockNumber <= to),
      splits,
      headers,
      to,
    );
    return { to, touched, calls: 1 };
  }

  /**
   * Reads ranges from `fromBlock` towards `end` until one is recorded, splitting refused ones;
   * `to` is the last block recorded, or null when none could be (the pass then moves on).
   */
  private async readRange(fromBlock: bigint, end: bigint, budget: number): Promise<{ to: bigint | null; touched: ReceiptKey[]; calls: number }> {
    const { batches, splits } = await this.filterAddresses();
    let calls = 0;
    for (;;) {
      if (calls > 0 && calls + batches.length > budget) return { to: null, touched: [], calls };
      const toBlock = fromBlock + this.range - 1n < end ? fromBlock + this.range - 1n : end;
      const raw: RawLog[] = [];
      let refused: Refusal | null = null;
      for (const batch of batches) {
        calls++;
        try {
          raw.push(...(await this.getLogs({ fromBlock, toBlock }, batch)));
        } catch (err) {
          refused = refusal(err);
          if (refused === null) throw err;
          if (toBlock === fromBlock) throw new Refused(`block ${fromBlock}: the provider refused its logs (${shortMessage(err)}); read again next pass`);
          break;
        }
      }
      if (refused !== null) {
        this.shrink(fromBlock, toBlock, refused);
        continue;
      }
      this.grow();
      const last = await this.header(toBlock);
      if (last === null) throw new PassStop(`block ${toBlock}: the node does not have it yet`);
      const logs = decodeLogs(raw);
      if (logs.some((l) => l.blockNumber === toBlock && l.blockHash !== last.hash)) {
        throw new PassStop(`block ${toBlock} changed while its range was read`);
      }
      const touched = await this.record(logs, splits, new Map([[toBlock, last]]), toBlock);
      return { to: toBlock, touched, calls };
    }
  }

  /** After a refusal: the provider's suggested range when it names one starting here, else half. */
  private shrink(fromBlock: bigint, toBlock: bigint, r: Refusal): void {
    const span = toBlock - fromBlock + 1n;
    let next = span / 2n;
    if (r.suggested !== undefined && r.suggested.from === fromBlock && r.suggested.to >= fromBlock && r.suggested.to < toBlock) {
      next = r.suggested.to - fromBlock + 1n;
    }
    this.range = next < 1n ? 1n : next;
    this.rangeSuccesses = 0;
    this.o.logger.info({ fromBlock, toBlock, range: this.range, refusal: r.message }, 'eth_getLogs refused: splitting the range');
  }

  private grow(): void {
    if (++this.rangeSuccesses < RANGE_GROWTH || this.range >= this.limits.maxRange) return;
    this.rangeSuccesses = 0;
    this.range = this.range * 2n > this.limits.maxRange ? this.limits.maxRange : this.range * 2n;
  }

  /**
   * When the chain the node follows is not the one read: finds the newest recorded block at or
   * below `below` that the node still has, withdraws what the blocks above it gave, and returns it
   * (the new cursor). A block the node does not have ends the pass: lag is not a reorganisation.
   */
  private async reorganise(below: bigint, withdrawn: ReceiptKey[]): Promise<bigint> {
    const { db, logger } = this.o;
    let ancestor: bigint | null = null;
    let before = below + 1n;
    // Newest first, a page at a time: most reorganisations are a block or two deep.
    while (ancestor === null) {
      const page = await db
        .select({ number: chainBlocks.number, hash: chainBlocks.hash })
        .from(chainBlocks)
        .where(and(eq(chainBlocks.cursor, CURSOR), lt(chainBlocks.number, before)))
        .orderBy(desc(chainBlocks.number))
        .limit(32);
      if (page.length === 0) break;
      for (const b of page) {
        const h = await this.headerFromAnyNode(b.number);
        if (h === null) throw new PassStop(`block ${b.number}: the node does not have it; no reorganisation is assumed`);
        if (h.hash === b.hash) {
          ancestor = b.number;
          break;
        }
      }
      before = page.at(-1)!.number;
    }
    if (ancestor === below) {
      // The block that looked replaced is the one recorded after all: two nodes answered from two
      // views. Nothing is proven removed, so nothing is withdrawn.
      throw new PassStop(`block ${below}: the node's answers disagree; read again next pass`);
    }
    if (ancestor === null) {
      const [oldest] = await db
        .select({ number: chainBlocks.number })
        .from(chainBlocks)
        .where(eq(chainBlocks.cursor, CURSOR))
        .orderBy(chainBlocks.number)
        .limit(1);
      ancestor = (oldest?.number ?? 1n) - 1n;
      logger.error({ from: ancestor + 1n }, 'chain reorganisation deeper than the block window: reading it all again');
    }
    const removed = await db.transaction(async (tx) => {
      const gone = await tx
        .delete(receiptTransfers)
        .where(gt(receiptTransfers.blockNumber, ancestor))
        .returning({ wallet: receiptTransfers.wallet, receiptId: receiptTransfers.receiptId });
      await tx.delete(splitTransactions).where(gt(splitTransactions.blockNumber, ancestor));
      await tx.delete(chainBlocks).where(and(eq(chainBlocks.cursor, CURSOR), gt(chainBlocks.number, ancestor)));
      await this.moveCursor(tx, ancestor);
      const unmined = await unmineSweeps(tx, ancestor);
      await forgetRefundBlocks(tx, ancestor);
      const unique = [...new Map(gone.map((g) => [keyOf(g), g])).values()];
      await this.watch(tx, unique);
      return { receipts: unique, unmined };
    });
    await this.sendAgain(removed.unmined);
    withdrawn.push(...removed.receipts);
    this.reorganisations++;
    logger.warn({ ancestor, receipts: removed.receipts.length, pendingSweeps: removed.unmined.length }, 'chain reorganisation: withdrew what the removed blocks held and reading them again');
    return ancestor;
  }

  /**
   * Sends the signed transactions of pending sweeps again after a reorganisation, as they were
   * (same nonce and fee): one the removed blocks held is mined again at once, filling the gap its
   * nonce would leave; a node that still has one answers "already known" or "nonce too low", and
   * one too cheap now is replaced by the sweeper when overdue.
   */
  private async sendAgain(raws: Hex[]): Promise<void> {
    for (const raw of raws) {
      await this.request('eth_sendRawTransaction', [raw], false).catch((err: unknown) => {
        this.o.logger.info({ err }, 'sweep removed by a reorganisation: sending it again was refused; the sweeper follows it');
      });
    }
  }

  private async moveCursor(tx: Tx, block: bigint): Promise<void> {
    const now = Date.now();
    await tx
      .insert(chainCursors)
      .values({ name: CURSOR, block, updatedAt: now })
      .onConflictDoUpdate({ target: chainCursors.name, set: { block, updatedAt: now } });
  }

  private async watch(tx: Tx, keys: ReceiptKey[]): Promise<void> {
    await watch(tx, keys, Date.now());
  }

  /**
   * Records the logs of blocks up to `through` (their coverage already proven) and moves the
   * cursor there, in one transaction. `headers` are the blocks whose hash was read.
   */
  private async record(
    logs: ChainLog[],
    splits: Map<string, { wallet: string; platformBps: number }>,
    headers: Map<bigint, Header>,
    through: bigint,
  ): Promise<ReceiptKey[]> {
    const { chain, db } = this.o;
    const token = chain.usdc.address.toLowerCase();
    const transfers = logs.filter((l) => l.address === token && l.event.kind === 'transfer' && l.event.value > 0n);
    const releases = logs.filter((l) => splits.has(l.address) && l.event.kind === 'release' && l.event.token === token && l.event.amount > 0n);
    const addresses = [...new Set(transfers.flatMap((l) => (l.event.kind === 'transfer' ? [l.event.to, l.event.from] : [])))];
    const payAddresses = await this.receiptsAt(addresses);
    const timeOf = async (l: ChainLog): Promise<number> => {
      if (l.timestamp !== undefined) return l.timestamp;
      let h = headers.get(l.blockNumber);
      if (h === undefined) {
        const read = await this.header(l.blockNumber);
        if (read === null) throw new PassStop(`block ${l.blockNumber}: the node does not have it yet`);
        if (read.hash !== l.blockHash) throw new PassStop(`block ${l.blockNumber} changed while it was read`);
        h = read;
        headers.set(l.blockNumber, h);
      }
      return h.timestamp;
    };
    const rows: (typeof receiptTransfers.$inferInsert)[] = [];
    const splitRows: Parameters<typeof recordSplitTransaction>[1][] = [];
    const blocks = new Map<bigint, string>([...headers].filter(([n]) => n === through).map(([n, h]) => [n, h.hash]));
    for (const log of transfers) {
      if (log.event.kind !== 'transfer') continue;
      const { from, to, value } = log.event;
      const receiptTo = payAddresses.get(to);
      const receiptFrom = payAddresses.get(from);
      const split = splits.get(to);
      const base = {
        transactionHash: log.transactionHash,
        logIndex: log.logIndex,
        token,
        fromAddress: from,
        amountUnits: value.toString(),
        blockNumber: log.blockNumber,
        blockHash: log.blockHash,
      };
      if (receiptTo !== undefined) {
        rows.push({ ...base, ...receiptTo, kind: 'in', timestamp: await timeOf(log) });
      } else if (receiptFrom !== undefined && split !== undefined && split.wallet === receiptFrom.wallet) {
        rows.push({ ...base, ...receiptFrom, kind: 'sweep', timestamp: await timeOf(log) });
      }
      if (split !== undefined) {
        splitRows.push({
          wallet: split.wallet,
          kind: 'payment',
          splitAddress: to,
          counterparty: from,
          receiptId: receiptFrom !== undefined && receiptFrom.wallet === split.wallet ? receiptFrom.receiptId : null,
          amountUnits: value.toString(),
          // Set from the split's running total below (applyCumulativeFees).
          feeUnits: '0',
          currency: chain.usdc.symbol,
          status: 'received',
          transactionHash: base.transactionHash,
          logIndex: log.logIndex,
          blockNumber: log.blockNumber,
          timestamp: await timeOf(log),
        });
      }
      if (receiptTo !== undefined || receiptFrom !== undefined || split !== undefined) blocks.set(log.blockNumber, log.blockHash);
    }
    for (const log of releases) {
      if (log.event.kind !== 'release') continue;
      const split = splits.get(log.address)!;
      blocks.set(log.blockNumber, log.blockHash);
      splitRows.push({
        wallet: split.wallet,
        kind: 'release',
        splitAddress: log.address,
        counterparty: log.event.to,
        amountUnits: log.event.amount.toString(),
        feeUnits: '0',
        currency: chain.usdc.symbol,
        status: 'released',
        transactionHash: log.transactionHash,
        logIndex: log.logIndex,
        blockNumber: log.blockNumber,
        timestamp: await timeOf(log),
      });
    }
    const touched = [...new Map(rows.map((r) => [keyOf(r), { wallet: r.wallet, receiptId: r.receiptId }])).values()];
    const paidSplits = new Map<string, { wallet: string; platformBps: number; first: { blockNumber: bigint; logIndex: number } }>();
    for (const r of splitRows) {
      if (r.kind !== 'payment' || paidSplits.has(r.splitAddress)) continue;
      paidSplits.set(r.splitAddress, { ...splits.get(r.splitAddress)!, first: r });
    }
    await db.transaction(async (tx) => {
      if (rows.length > 0) await tx.insert(receiptTransfers).values(rows).onConflictDoNothing();
      for (const row of splitRows) await recordSplitTransaction(tx, row);
      for (const [address, s] of paidSplits) await applyCumulativeFees(tx, { wallet: s.wallet, splitAddress: address, platformBps: s.platformBps, from: s.first });
      await this.watch(tx, touched);
      if (blocks.size > 0) {
        await tx
          .insert(chainBlocks)
          .values([...blocks].map(([number, hash]) => ({ cursor: CURSOR, number, hash })))
          .onConflictDoUpdate({ target: [chainBlocks.cursor, chainBlocks.number], set: { hash: sql`excluded.hash` } });
      }
      await this.moveCursor(tx, through);
    });
    return touched;
  }

  /** The receipts whose payment address is one of these. */
  private async receiptsAt(addresses: string[]): Promise<Map<string, ReceiptKey>> {
    if (addresses.length === 0) return new Map();
    const rows = await this.o.db
      .select({ address: receipts.payAddress, wallet: receipts.wallet, receiptId: receipts.id })
      .from(receipts)
      .where(inArray(receipts.payAddress, addresses));
    return new Map(rows.map((r) => [r.address!, { wallet: r.wallet, receiptId: r.receiptId }]));
  }
}

/**
 * Immediate re-asks of a block's pinned logs that a lagging node did not have, while a receipt
 * waits: as many as any pinned read's (LAG_RETRIES, three). A miss (about one answer in three on a
 * busy provider) would otherwise hold the payment a block time or more: with one re-ask, stalls of
 * three passes were seen; with two, about one block read in 40 still ended its pass, and a
 * payment's path reads four or five blocks (its own, its sweep's, the confirmations). Each re-ask
 * costs one eth_getLogs, only after a miss and only while a receipt waits, so the idle cost stays
 * at one eth_getLogs a block.
 */
const PINNED_LOG_RETRIES = LAG_RETRIES;
/** How long an eth_getLogs that a server failed in passing (a 5xx) waits before its one re-ask. */
const PASSING_FAILURE_PAUSE_MS = 200;
/** Successful range reads before the range size doubles again after a refusal. */
const RANGE_GROWTH = 8;

/** Decodes Transfer and ERC20PaymentReleased logs, in log order; others are dropped. */
function decodeLogs(raw: RawLog[]): ChainLog[] {
  const out: ChainLog[] = [];
  for (const r of raw) {
    const common = {
      address: r.address.toLowerCase(),
      blockNumber: BigInt(r.blockNumber),
      blockHash: r.blockHash.toLowerCase(),
      transactionHash: r.transactionHash.toLowerCase(),
      logIndex: Number(BigInt(r.logIndex)),
      timestamp: r.blockTimestamp === undefined ? undefined : Number(BigInt(r.blockTimestamp)) * 1000,
    };
    try {
      if (r.topics[0] === TRANSFER_TOPIC) {
        const d = decodeEventLog({ abi: [TRANSFER], topics: r.topics, data: r.data, strict: true });
        out.push({ ...common, event: { kind: 'transfer', from: d.args.from.toLowerCase(), to: d.args.to.toLowerCase(), value: d.args.value } });
      } else if (r.topics[0] === RELEASED_TOPIC) {
        const d = decodeEventLog({ abi: [RELEASED], topics: r.topics, data: r.data, strict: true });
        out.push({ ...common, event: { kind: 'release', token: d.args.token.toLowerCase(), to: d.args.to.toLowerCase(), amount: d.args.amount } });
      }
    } catch {
      // Not this event's layout (an ERC-721 Transfer has its value indexed): not money the service reads.
    }
  }
  return out.sort((a, b) => (a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1));
}

export interface Refusal {
  message: string;
  /** The range the provider said would work, when it said one. */
  suggested?: { from: bigint; to: bigint };
}

const REFUSAL_TEXT =
  /more than \d+ results|response size|size exceeded|too large|too many (results|logs|blocks)|block range|range (is )?too (large|wide|big)|exceeds? (the )?(max|limit)|limit exceeded|query timeout|request entity/i;

/**
 * Whether an eth_getLogs failure is the provider refusing the answer's size (and so worth
 * splitting), with the range it suggests, or null for any other failure.
 */
export function refusal(err: unknown): Refusal | null {
  const seen = new Set<unknown>();
  let e: unknown = err;
  const texts: string[] = [];
  let refused = false;
  let data: unknown;
  while (e !== null && typeof e === 'object' && !seen.has(e)) {
    seen.add(e);
    const o = e as { code?: number; status?: number; message?: string; details?: string; shortMessage?: string; data?: unknown; cause?: unknown };
    // Infura's rate limit is HTTP 429 with -32005 too: a limit on calls, not on the answer's size.
    if (o.status === 429) return null;
    if (e instanceof ResponseBodyTooLargeError || o.code === -32005 || o.status === 413) refused = true;
    for (const t of [o.details, o.shortMessage, o.message]) if (typeof t === 'string') texts.push(t);
    if (o.data !== undefined && data === undefined) data = o.data;
    e = o.cause;
  }
  const text = texts.join(' | ');
  if (!refused && !REFUSAL_TEXT.test(text)) return null;
  return { message: texts[0] ?? 'refused', suggested: suggestedRange(text, data) };
}

/** Alchemy: "this block range should work: [0x1, 0x2]"; Infura: error data {from, to}. */
function suggestedRange(text: string, data: unknown): { from: bigint; to: bigint } | undefined {
  const m = /\[\s*(0x[0-9a-f]+)\s*,\s*(0x[0-9a-f]+)\s*\]/i.exec(text);
  if (m !== null) return { from: BigInt(m[1]!), to: BigInt(m[2]!) };
  const d = data as { from?: unknown; to?: unknown } | undefined;
  if (d !== undefined && d !== null && typeof d.from === 'string' && typeof d.to === 'string' && /^0x[0-9a-f]+$/i.test(d.from) && /^0x[0-9a-f]+$/i.test(d.to)) {
    return { from: BigInt(d.from), to: BigInt(d.to) };
  }
  return undefined;
}

function rateLimited(filter: { blockHash: string } | { fromBlock: bigint; toBlock: bigint }, err: unknown): RateLimited {
  const blocks = 'blockHash' in filter ? `block ${filter.blockHash}` : `blocks ${filter.fromBlock}-${filter.toBlock}`;
  return new RateLimited(`${blocks}: the provider's rate limit refused eth_getLogs (${shortMessage(err)}); read next poll`);
}

function shortMessage(err: unknown): string {
  const o = err as { shortMessage?: string; message?: string };
  return (o.shortMessage ?? o.message ?? String(err)).split('\n')[0]!.slice(0, 200);
}

export function keyOf(r: ReceiptKey): string {
  return `${r.wallet} ${r.receiptId}`;
}

/**
 * Sweeps recorded mined in blocks a reorganisation removed are pending again: the chain counts
 * their nonces as unused, and left mined each would be a gap below every later nonce, which the
 * sweeper would send and replace for ever without any being mined. Pending, the sweeper finds the
 * transaction again if the new chain holds it, or replaces it with the same nonce
 * (src/payments/sweeper.ts). One pending row per address and per nonce (the unique indexes): a row
 * that would collide stays mined, and the sweeper takes it up once it sees its nonce unused.
 * Returns the signed transactions of every pending sweep, lowest nonce first, to be sent again:
 * the removed blocks may have held any of them.
 */
async function unmineSweeps(tx: Tx, ancestor: bigint): Promise<Hex[]> {
  const removed = await tx
    .select({ id: sweeps.id, account: sweeps.account, nonce: sweeps.nonce, payAddress: sweeps.payAddress })
    .from(sweeps)
    .where(and(eq(sweeps.state, 'mined'), gt(sweeps.minedBlock, ancestor)))
    .orderBy(sweeps.nonce);
  for (const row of removed) {
    await tx
      .update(sweeps)
      .set({ state: 'pending', minedHash: null, minedBlock: null, atFeeCap: false, updatedAt: Date.now() })
      .where(
        and(
          eq(sweeps.id, row.id),
          sql`not exists (select 1 from ${sweeps} p where p.state = 'pending' and (p.pay_address = ${row.payAddress} or (p.account = ${row.account} and p.nonce = ${row.nonce})))`,
        ),
      );
  }
  const pending = await tx.select({ raw: sweeps.raw }).from(sweeps).where(eq(sweeps.state, 'pending')).orderBy(sweeps.account, sweeps.nonce);
  return pending.map((p) => p.raw as Hex);
}
