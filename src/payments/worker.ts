/**
 * The chain worker: under the `chain` lease, one instance at a time follows payments. A pass:
 *
 *   1. stores the payment address of every receipt whose merchant's split is known;
 *   2. reads the new blocks (src/payments/scanner.ts), following reorganisations;
 *   3. settles every receipt whose transfers changed or that still waits for depth or a sweep
 *      (src/payments/settle.ts), most money first within a time budget, each on its own: one
 *      receipt's failure is logged and skipped;
 *   4. starts the sweeps owed (src/payments/sweeper.ts) in the background, as soon as the
 *      receipts holding money worth a sweep are settled (and smaller ones for 50 ms, before dust
 *      can hold them); the next pass waits for them, so a pass never waits for a transaction to
 *      be mined;
 *   5. credits money that reached newly stored addresses before they were stored
 *      (src/payments/early-money.ts), settled next pass;
 *   6. expires receipts whose time ran out with nothing received;
 *   7. follows a bounded number of payment-page hints, and of refunds' transfers: verified at
 *      depth, withdrawn by a reorganisation (src/payments/refund-proofs.ts), and finds ETH and other
 *      tokens at payment addresses (src/payments/other-sweeps.ts), swept by the next run.
 *
 * A payment's path (scan, settle, sweep) comes first: what follows it, however much there is (a
 * burst of new addresses, hundreds of dusted receipts), never delays a payment's sweep.
 *
 * Other instances stand by and take over when the lease lapses. All state lives in the database,
 * so a restart resumes where the last pass stopped.
 */
import { randomBytes } from 'node:crypto';
import { and, isNull, lte, or, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import type { Db } from '../db/client.ts';
import { rowsOf } from '../db/rows.ts';
import { receiptCanExpire, receipts, receiptWatch } from '../db/schema.ts';
import { centsToTokenUnits } from '../lib/money.ts';
import { LeasedLoop } from '../workers/leased-loop.ts';
import { followHints } from './hints.ts';
import { BALANCE_CHECKS_PER_PASS, balanceTokensOf, checkOtherMoney, checkRequestedBalances, stampWaitMs } from './other-money.ts';
import { creditEarlyMoney } from './early-money.ts';
import { fillPayAddresses } from './pay-address.ts';
import { followRefundProofs } from './refund-proofs.ts';
import { keyOf, PaymentScanner, type ReceiptKey, type ScanLimits, type ScanResult } from './scanner.ts';
import { expireReceipt, settleReceipt } from './settle.ts';
import { OtherSweeps } from './other-sweeps.ts';
import { Sweeper, type SweepHealth } from './sweeper.ts';
import { mostMoneyFirst } from './watch.ts';

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
  private readonly otherSweeps: OtherSweeps;
  private readonly loop: LeasedLoop;
  /** How long after its timestamp a block reaches the provider, as learnt (nextPollMs). */
  private arrivalMs = BLOCK_ARRIVAL_MS;
  /** The block the next pass is timed for, when it was timed for one. */
  private duePoll: bigint | undefined;
  /** Passes since the next block became overdue without a new block found. */
  private overdueLooks = 0;
  /** The newest head any pass's `latest` named. */
  private newestAnswered = -1n;

  /** SWEEP_DUST_USD in the token's base units: money from which a receipt is settled every pass. */
  private readonly dustUnits: bigint;

  constructor(private readonly o: ChainWorkerOptions) {
    this.dustUnits = centsToTokenUnits(BigInt(o.sweepDustCents ?? 100), o.chain.usdc.decimals);
    this.scanner = new PaymentScanner({
      db: o.db,
      chain: o.chain,
      logger: o.logger,
      platformRecipient: o.platformRecipient,
      startBlock: o.startBlock,
      limits: o.scanLimits,
      blockTimeSeconds: o.blockTimeSeconds,
      // Polling at the block time: a block a node behind could not give is read at the next poll.
      lagPauseMs: (o.intervalMs ?? 2000) >= 1000 && o.blockTimeSeconds !== undefined ? o.blockTimeSeconds * 1000 - 200 : 0,
    });
    this.otherSweeps = new OtherSweeps({ db: o.db, chain: o.chain, logger: o.logger, dustCents: o.sweepDustCents ?? 100 });
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
   * more): when the next block is due at the provider, i.e. the newest block's time (the newest
   * any answer named: a lagging node's older head never moves it) plus the block time plus how
   * late blocks reach the provider. That lateness is learnt: a pass at the due time that finds the
   * block moves it 20 ms earlier, one that finds the same head moves it 100 ms later (an older head
   * is a lagging node and teaches nothing). A due pass that found no new block looks again after a
   * quarter block time, twice, then every block time until one comes. A pass that found the block but could not read it (a node
   * behind) waits for the next block's due time: the next pass reads both with one range.
   * So a pass runs about once per block, and calls nothing but `latest` when nothing is new.
   * A dev chain that mines per transaction keeps its steady short interval.
   */
  private nextPollMs(): number | undefined {
    const interval = this.o.intervalMs ?? 2000;
    const pass = this.lastPass;
    if (interval < 1000 || pass === undefined || this.o.blockTimeSeconds === undefined) return undefined;
    const blockMs = this.o.blockTimeSeconds * 1000;
    if (this.duePoll !== undefined) {
      if (pass.answeredHead >= this.duePoll) this.arrivalMs = Math.max(0, this.arrivalMs - 20);
      else if (pass.answeredHead === this.duePoll - 1n) this.arrivalMs = Math.min(blockMs, this.arrivalMs + 100);
    }
    // A pass that found a new block (however long it took) starts the quick looks afresh; a
    // lagging node's older head, and the newest again after it, are nothing new.
    if (pass.answeredHead > this.newestAnswered) {
      this.overdueLooks = 0;
      this.newestAnswered = pass.answeredHead;
    }
    const due = pass.chainHeadTime + blockMs + this.arrivalMs - Date.now();
    this.duePoll = due > 0 ? pass.chainHead + 1n : undefined;
    if (due > 0) {
      this.overdueLooks = 0;
      return Math.min(due, interval);
    }
    // Overdue: a quick look or two (the answer may have come from a node behind), then the block
    // time, so a chain that stalls costs one header per block time.
    return ++this.overdueLooks <= OVERDUE_LOOKS ? Math.max(100, Math.floor(blockMs / 4)) : interval;
  }

  /** One pass: hold the lease, then follow payments. */
  async tick(now = Date.now()): Promise<void> {
    await this.loop.tick(now);
  }

  /** Steps 1 to 7 of the module comment. */
  async pass(now = Date.now()): Promise<PassStats> {
    const { db, chain, logger } = this.o;
    const cpu = process.cpuUsage();
    // Where the pass's time went (ms from its start), in the debug log.
    const started = Date.now();
    const ms: Record<string, number> = {};
    const mark = (step: string) => (ms[step] = Date.now() - started);
    // What the last pass sent is on its way to the node before this one reads the chain.
    await this.sweeper.idle();
    // The head first: a payment in a block up to it was sent to an address its buyer read from a
    // receipt committed before, which the filling then sees.
    const waiting = await awaited(db);
    const head = await this.scanner.head(waiting);
    mark('head');
    const factory = chain.paymentFactory;
    if (factory !== undefined) await fillPayAddresses(db, factory);
    // A scan that fails (the node errs or stalls) still lets receipts settle and expire on what is
    // known; the pass then fails, so the loop backs off.
    let scanError: Error | undefined;
    const scan: ScanResult = await this.scanner.pass(head, waiting).catch((err: unknown) => {
      scanError = err instanceof Error ? err : new Error(String(err), { cause: err });
      const newest = this.scanner.newest ?? head;
      return { head: this.lastPass?.head ?? 0n, chainHead: newest.number, chainHeadTime: newest.timestamp, touched: [], withdrawn: [], behind: false, stopped: null, rpcCalls: 0 };
    });
    mark('scan');
    // Watched receipts that are due: not those that only wait for a depth not yet reached.
    const watched = await db
      .select({ wallet: receiptWatch.wallet, receiptId: receiptWatch.receiptId })
      .from(receiptWatch)
      .where(or(isNull(receiptWatch.dueBlock), lte(receiptWatch.dueBlock, scan.head)))
      .limit(WATCH_PER_PASS);
    const keys = new Map<string, ReceiptKey>([...watched, ...scan.touched].map((k) => [keyOf(k), k]));
    const context = {
      token: chain.usdc.address.toLowerCase(),
      decimals: chain.usdc.decimals,
      head: scan.head,
      confirmations: this.o.confirmations,
      logger,
    };
    let failed = 0;
    // Most money first. Receipts holding SWEEP_DUST_USD or more are all settled every pass (each
    // costs its sender that much, paid to the merchant); the rest only within a time budget, and
    // what is left stays watched for the next pass: dust to hundreds of addresses never holds back
    // a payment, and a stream of payments never starves a smaller one.
    // The sweeps owed go out in the background once every receipt holding money worth a sweep is
    // settled and the smaller ones have had SMALL_BEFORE_SWEEPS_MS: a small receipt paid in full
    // (swept whatever its amount) sorts before dust and goes in its own pass's run, while dust to
    // hundreds of addresses holds the sweeps no longer than that. A scan that failed sends none:
    // the pass fails and is tried again. The newest head any node named dates each send (when to
    // replace it); the scanned head is what the balances are read at.
    let sweepsStarted = false;
    const startSweeps = () => {
      if (sweepsStarted || scanError !== undefined) return;
      sweepsStarted = true;
      this.sweeper.start(scan.chainHead, scan.head, head.baseFee);
    };
    const settleStarted = Date.now();
    let smallFrom: number | undefined;
    for (const { key, units } of await mostMoneyFirst(db, [...keys.values()], context.token)) {
      if (units < this.dustUnits) {
        smallFrom ??= Date.now();
        if (Date.now() - smallFrom >= SMALL_BEFORE_SWEEPS_MS) startSweeps();
        if (Date.now() - settleStarted >= SETTLE_BUDGET_MS) break;
      }
      try {
        const outcome = await db.transaction((tx) => settleReceipt(tx, key, { ...context, now: Date.now() }));
        if (outcome.unswept > 0n && outcome.payAddress !== null) this.sweeper.want({ ...key, payAddress: outcome.payAddress, unswept: outcome.unswept });
      } catch (err) {
        failed++;
        logger.error({ err, wallet: key.wallet, receiptId: key.receiptId }, 'chain worker: settling a receipt failed; the others go on, it is tried again next pass');
      }
    }
    mark('settle');
    startSweeps();
    // Money that reached newly stored addresses before they were stored (src/payments/early-money.ts): after
    // the settling, so a burst of new addresses never delays a payment's; what it credits is watched
    // and settled next pass.
    const early = await creditEarlyMoney({ db, chain, logger, now, waitMs: stampWaitMs(this.o.blockTimeSeconds) }).catch((err: unknown) => {
      logger.error({ err }, 'chain worker: looking for money that reached payment addresses early failed; tried again next pass');
      return { credited: [], rpcCalls: 0 };
    });
    mark('early');
    const expired = await this.expire(now, scan.chainHead);
    mark('expire');
    const hints = await followHints(db, chain, scan.head, now);
    // ETH or other tokens at payment addresses, where a payment page or a hint asked (other-money.ts),
    // once the newest head is a block made after the ask.
    const balanceReads = await checkRequestedBalances(db, chain, balanceTokensOf(chain, this.o.balanceTokens), { now, block: scan.chainHead, blockTime: scan.chainHeadTime, waitMs: stampWaitMs(this.o.blockTimeSeconds) }, logger).catch((err: unknown) => {
      logger.error({ err }, 'chain worker: reading other balances at payment addresses failed; tried again next pass');
      return 0;
    });
    // Refunds verified at depth, withdrawn by reorganisations (refund-proofs.ts).
    const refundReads = await followRefundProofs({ db, chain, head: scan.chainHead, confirmations: this.o.confirmations, now, logger }).catch((err: unknown) => {
      logger.error({ err }, 'chain worker: following refund proofs failed; tried again next pass');
      return 0;
    });
    // ETH and other tokens found there go to the split too, when worth their gas (other-sweeps.ts).
    const others = await this.otherSweeps.needs({ now, block: scan.chainHead, baseFee: head.baseFee }).catch((err: unknown) => {
      logger.error({ err }, 'chain worker: choosing sweeps of other money failed; tried again next pass');
      return [];
    });
    for (const need of others) this.sweeper.want(need);
    mark('other');
    logger.debug({ head: head.number, read: scan.head, touched: scan.touched.length, due: keys.size, stopped: scan.stopped, ms }, 'chain worker: pass');
    if (scanError !== undefined) throw scanError;
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
      answeredHead: head.number,
      stopped: scan.stopped,
      rpcCalls: scan.rpcCalls + early.rpcCalls + hints + refundReads + this.sweeper.lastRpcCalls + this.otherSweeps.lastRpcCalls + balanceReads * (1 + balanceTokensOf(chain, this.o.balanceTokens).length),
      cpuMicros: used.user + used.system,
    };
    return this.lastPass;
  }

  /**
   * Receipts whose time ran out with nothing received: failed, exception expired. The query reads
   * receipts_expiry_idx, which holds only receipts that can still expire, so receipts that never
   * will cost a pass nothing and cannot fill its limit; expireReceipt decides again under the lock.
   */
  private async expire(now: number, block: bigint): Promise<number> {
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
          await checkOtherMoney(db, chain, tokens, r, { now, block }, logger);
        }
        if (await db.transaction((tx) => expireReceipt(tx, r, now, token))) expired++;
      } catch (err) {
        logger.error({ err, wallet: r.wallet, receiptId: r.receiptId }, 'chain worker: expiring a receipt failed; the others go on');
      }
    }
    return expired;
  }
}

/** Whether any receipt waits for money (open, unpaid) or for depth and sweeps (watched). */
async function awaited(db: Db): Promise<boolean> {
  const answer = await db.execute(sql`select (exists (select 1 from ${receiptWatch}) or exists (select 1 from ${receipts} where ${receiptCanExpire(receipts)})) as waiting`);
  return rowsOf(answer)[0]?.waiting === true;
}

export interface PassStats {
  /** The newest block read. */
  head: bigint;
  /** The newest block the node named, and its time (Unix ms). */
  chainHead: bigint;
  chainHeadTime: number;
  /** The head this pass's `latest` named (older than chainHead when a lagging node answered). */
  answeredHead: bigint;
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

/** Quick looks (a quarter block time apart) once the next block is overdue, before polling at the block time. */
const OVERDUE_LOOKS = 2;
/** How long after its timestamp a block is expected at the provider, at first (then learnt). */
const BLOCK_ARRIVAL_MS = 400;
/**
 * How long a pass settles receipts holding less than SWEEP_DUST_USD before leaving the rest (still
 * watched) to the next pass. A settle is a transaction of a few milliseconds; the budget holds a
 * few hundred.
 */
const SETTLE_BUDGET_MS = 500;
/** How long receipts under SWEEP_DUST_USD are settled before the pass's sweeps start (the rest of the budget runs beside them). */
const SMALL_BEFORE_SWEEPS_MS = 50;
/** Receipts settled per pass besides those whose transfers just changed. */
const WATCH_PER_PASS = 1000;
/** Receipts expired per pass at most; the rest wait for the next. */
export const EXPIRE_PER_PASS = 500;
