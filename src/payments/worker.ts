/**
 * The chain worker: under the `chain` lease, one instance at a time follows payments. A pass:
 *
 *   1. stores the payment address of every receipt whose merchant's split is known;
 *   2. reads the new blocks (src/payments/scanner.ts), following reorganisations, and credits money
 *      that reached newly stored addresses before they were stored (src/payments/early-money.ts);
 *   3. settles every receipt whose transfers changed or that still waits for depth or a sweep
 *      (src/payments/settle.ts), each on its own: one receipt's failure is logged and skipped;
 *   4. expires receipts whose time ran out with nothing received;
 *   5. follows a bounded number of payment-page hints;
 *   6. starts the sweeps owed (src/payments/sweeper.ts) in the background; the next pass waits
 *      for them, so a pass never waits for a transaction to be mined.
 *
 * Other instances stand by and take over when the lease lapses. All state lives in the database,
 * so a restart resumes where the last pass stopped.
 */
import { randomBytes } from 'node:crypto';
import { and, lte } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import type { Db } from '../db/client.ts';
import { receiptCanExpire, receipts, receiptWatch } from '../db/schema.ts';
import { LeasedLoop } from '../workers/leased-loop.ts';
import { followHints } from './hints.ts';
import { BALANCE_CHECKS_PER_PASS, balanceTokensOf, checkOtherMoney, checkRequestedBalances } from './other-money.ts';
import { creditEarlyMoney } from './early-money.ts';
import { fillPayAddresses } from './pay-address.ts';
import { keyOf, PaymentScanner, type ReceiptKey, type ScanLimits, type ScanResult } from './scanner.ts';
import { expireReceipt, settleReceipt } from './settle.ts';
import { Sweeper, type SweepHealth } from './sweeper.ts';

export const CHAIN_LEASE = 'chain';

export interface ChainWorkerOptions {
  db: Db;
  chain: ChainDeps;
  logger: Logger;
  confirmations: number;
  platformRecipient: string | undefined;
  /** Between passes: the block time (CHAIN_POLL_MS). A kick() (a payment-page hint) runs one at once. */
  intervalMs?: number;
  leaseTtlMs?: number;
  startBlock?: bigint;
  /** MAX_FEE_GWEI in wei (default 50 gwei). */
  maxFeeWei?: bigint;
  /** SWEEP_DUST_USD in cents (default 100). */
  sweepDustCents?: number;
  /** Blocks a sweep may stay unmined before it is replaced (default REPLACE_AFTER_BLOCKS). */
  replaceAfterBlocks?: bigint;
  /** eth_getLogs range, lag horizon and calls per pass (src/payments/scanner.ts). */
  scanLimits?: Partial<ScanLimits>;
  blockTimeSeconds?: number;
  /** BALANCE_TOKENS: other ERC-20 tokens whose balance at payment addresses is read (src/payments/other-money.ts). */
  balanceTokens?: readonly string[];
}

export class ChainWorker {
  readonly holder = `chain-${randomBytes(6).toString('hex')}`;
  readonly scanner: PaymentScanner;
  /** What the last pass did, for /healthz, the bench and the logs. */
  lastPass: PassStats | undefined;
  readonly sweeper: Sweeper;
  private readonly loop: LeasedLoop;

  constructor(private readonly o: ChainWorkerOptions) {
    this.scanner = new PaymentScanner({
      db: o.db,
      chain: o.chain,
      logger: o.logger,
      platformRecipient: o.platformRecipient,
      startBlock: o.startBlock,
      limits: o.scanLimits,
      blockTimeSeconds: o.blockTimeSeconds,
    });
    this.sweeper = new Sweeper({
      db: o.db,
      chain: o.chain,
      logger: o.logger,
      maxFeeWei: o.maxFeeWei ?? 50n * 10n ** 9n,
      dustCents: o.sweepDustCents ?? 100,
      replaceAfterBlocks: o.replaceAfterBlocks,
    });
    // One pass per block time; while passes fail (RPC down or stalling), back off up to 30 s.
    this.loop = new LeasedLoop({
      db: o.db,
      logger: o.logger,
      lease: CHAIN_LEASE,
      holder: this.holder,
      what: 'chain worker',
      intervalMs: o.intervalMs ?? 2000,
      maxBackoffMs: 30_000,
      leaseTtlMs: o.leaseTtlMs,
      pass: (now) => this.pass(now),
      nextIntervalMs: () => this.nextPollMs(),
    });
  }

  get isLeader(): boolean {
    return this.loop.isLeader;
  }

  start(): void {
    this.loop.start();
  }

  /** Runs a pass soon (after a buyer submits a transaction), instead of at the next interval. */
  kick(): void {
    this.loop.kick();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.sweeper.idle();
  }

  /** Receipts whose money waits at its payment address because nobody here can pay a sweep's gas. */
  get sweepsWaiting(): number {
    return this.sweeper.health().waitingForGas;
  }

  /** What /healthz and the admin app show about sweeps (src/payments/sweeper.ts). */
  sweepHealth(): SweepHealth {
    return this.sweeper.health();
  }

  /**
   * When the next pass should run on a chain with a block time (CHAIN_POLL_MS of a second or
   * more): just after the next block is due (the newest block's time plus the block time plus
   * BLOCK_ARRIVAL_MS), so a block is read about when it arrives and not up to a block time later;
   * when it is overdue, every quarter block time until it comes. A dev chain that mines per
   * transaction keeps its steady short interval.
   */
  private nextPollMs(): number | undefined {
    const interval = this.o.intervalMs ?? 2000;
    const pass = this.lastPass;
    if (interval < 1000 || pass === undefined || this.o.blockTimeSeconds === undefined) return undefined;
    const blockMs = this.o.blockTimeSeconds * 1000;
    const due = pass.chainHeadTime + blockMs + BLOCK_ARRIVAL_MS - Date.now();
    return due > 0 ? Math.min(due, interval) : Math.max(100, Math.floor(blockMs / 4));
  }

  /** One pass: hold the lease, then follow payments. */
  async tick(now = Date.now()): Promise<void> {
    await this.loop.tick(now);
  }

  /** Steps 1 to 6 of the module comment. */
  async pass(now = Date.now()): Promise<PassStats> {
    const { db, chain, logger } = this.o;
    const cpu = process.cpuUsage();
    // What the last pass sent is on its way to the node before this one reads the chain.
    await this.sweeper.idle();
    // The head first: a payment in a block up to it was sent to an address its buyer read from a
    // receipt committed before, which the filling then sees.
    const head = await this.scanner.head();
    const factory = chain.paymentFactory;
    if (factory !== undefined) await fillPayAddresses(db, factory);
    // A scan that fails (the node errs or stalls) still lets receipts settle and expire on what is
    // known; the pass then fails, so the loop backs off.
    let scanError: Error | undefined;
    const scan: ScanResult = await this.scanner.pass(head).catch((err: unknown) => {
      scanError = err instanceof Error ? err : new Error(String(err), { cause: err });
      return { head: this.lastPass?.head ?? 0n, chainHead: head.number, chainHeadTime: head.timestamp, touched: [], withdrawn: [], behind: false, stopped: null, rpcCalls: 0 };
    });
    // Money that reached newly stored addresses before they were stored (src/payments/early-money.ts).
    const early = await creditEarlyMoney({ db, chain, logger }).catch((err: unknown) => {
      logger.error({ err }, 'chain worker: looking for money that reached payment addresses early failed; tried again next pass');
      return { credited: [], rpcCalls: 0 };
    });
    const watched = await db.select({ wallet: receiptWatch.wallet, receiptId: receiptWatch.receiptId }).from(receiptWatch).limit(WATCH_PER_PASS);
    const keys = new Map<string, ReceiptKey>([...watched, ...scan.touched].map((k) => [keyOf(k), k]));
    const context = {
      token: chain.usdc.address.toLowerCase(),
      decimals: chain.usdc.decimals,
      head: scan.head,
      confirmations: this.o.confirmations,
      logger,
    };
    let failed = 0;
    for (const key of keys.values()) {
      try {
        const outcome = await db.transaction((tx) => settleReceipt(tx, key, { ...context, now: Date.now() }));
        if (outcome.unswept > 0n && outcome.payAddress !== null) this.sweeper.want({ ...key, payAddress: outcome.payAddress, unswept: outcome.unswept });
      } catch (err) {
        failed++;
        logger.error({ err, wallet: key.wallet, receiptId: key.receiptId }, 'chain worker: settling a receipt failed; the others go on, it is tried again next pass');
      }
    }
    const expired = await this.expire(now);
    const hints = await followHints(db, chain, scan.head, now);
    // ETH or other tokens at payment addresses, where a payment page or a hint asked (other-money.ts).
    const balanceReads = await checkRequestedBalances(db, chain, balanceTokensOf(chain, this.o.balanceTokens), now, logger).catch((err: unknown) => {
      logger.error({ err }, 'chain worker: reading other balances at payment addresses failed; tried again next pass');
      return 0;
    });
    if (scanError !== undefined) throw scanError;
    this.sweeper.start(scan.head, scan.head);
    // Behind the head (catching up within the pass's budget): the next pass at once.
    if (scan.behind) this.loop.kick();
    const used = process.cpuUsage(cpu);
    this.lastPass = {
      head: scan.head,
      settled: keys.size,
      sweeps: this.sweeper.lastSent,
      failed,
      expired,
      hints,
      chainHead: scan.chainHead,
      chainHeadTime: scan.chainHeadTime,
      stopped: scan.stopped,
      rpcCalls: scan.rpcCalls + early.rpcCalls + hints + this.sweeper.lastRpcCalls + balanceReads * (1 + balanceTokensOf(chain, this.o.balanceTokens).length),
      cpuMicros: used.user + used.system,
    };
    return this.lastPass;
  }

  /**
   * Receipts whose time ran out with nothing received: failed, exception expired. The query reads
   * receipts_expiry_idx, which holds only receipts that can still expire, so receipts that never
   * will cost a pass nothing and cannot fill its limit; expireReceipt decides again under the lock.
   */
  private async expire(now: number): Promise<number> {
    const { db, chain, logger } = this.o;
    const token = chain.usdc.address.toLowerCase();
    const due = await db
      .select({ wallet: receipts.wallet, receiptId: receipts.id, payAddress: receipts.payAddress, expiresAt: receipts.expiresAt, balancesCheckedAt: receipts.balancesCheckedAt })
      .from(receipts)
      .where(and(receiptCanExpire(receipts), lte(receipts.expiresAt, now)))
      .limit(EXPIRE_PER_PASS);
    const tokens = balanceTokensOf(chain, this.o.balanceTokens);
    let reads = 0;
    let expired = 0;
    for (const r of due) {
      try {
        // Before it expires, its address is read once more for ETH and other tokens: money there
        // gives wrong_token, which the expired receipt keeps; it never stops the expiry.
        if (r.payAddress !== null && (r.balancesCheckedAt === null || r.balancesCheckedAt < r.expiresAt)) {
          if (reads >= BALANCE_CHECKS_PER_PASS) continue;
          reads++;
          await checkOtherMoney(db, chain, tokens, r, now, logger);
        }
        if (await db.transaction((tx) => expireReceipt(tx, r, now, token))) expired++;
      } catch (err) {
        logger.error({ err, wallet: r.wallet, receiptId: r.receiptId }, 'chain worker: expiring a receipt failed; the others go on');
      }
    }
    return expired;
  }
}

export interface PassStats {
  /** The newest block read. */
  head: bigint;
  /** The newest block the node named, and its time (Unix ms). */
  chainHead: bigint;
  chainHeadTime: number;
  /** Why the scan stopped short of chainHead, if it did (a lagging node, a refused block). */
  stopped: string | null;
  settled: number;
  /** Sweeps sent by the sweeper's run that this pass waited for (started by the pass before). */
  sweeps: number;
  /** Receipts whose settling failed this pass (logged; tried again next pass). */
  failed: number;
  expired: number;
  hints: number;
  rpcCalls: number;
  cpuMicros: number;
}

/** How long after its timestamp a block is expected at the provider. */
const BLOCK_ARRIVAL_MS = 400;
/** Receipts settled per pass besides those whose transfers just changed. */
const WATCH_PER_PASS = 1000;
/** Receipts expired per pass at most; the rest wait for the next. */
export const EXPIRE_PER_PASS = 500;
