/**
 * The chain worker: under the `chain` lease, one instance at a time follows payments. A pass:
 *
 *   1. stores the payment address of every receipt whose merchant's split is known;
 *   2. reads the new blocks (src/payments/scanner.ts), following reorganisations;
 *   3. settles every receipt whose transfers changed or that still waits for depth or a sweep
 *      (src/payments/settle.ts), and sweeps what arrived into the merchant's split;
 *   4. expires receipts whose time ran out with nothing received;
 *   5. follows a bounded number of payment-page hints.
 *
 * Other instances stand by and take over when the lease lapses. All state lives in the database,
 * so a restart resumes where the last pass stopped.
 */
import { randomBytes } from 'node:crypto';
import { and, eq, lte } from 'drizzle-orm';
import type { Address, Hex } from 'viem';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import { paymentForwarderFactoryAbi, paymentSalt } from '../chain/payment-address.ts';
import { sendSerially } from '../chain/wallet-queue.ts';
import type { Db } from '../db/client.ts';
import { receiptCanExpire, receipts, receiptWatch, splitConfigs } from '../db/schema.ts';
import { LeasedLoop } from '../workers/leased-loop.ts';
import { followHints } from './hints.ts';
import { fillPayAddresses } from './pay-address.ts';
import { keyOf, PaymentScanner, type ReceiptKey } from './scanner.ts';
import { expireReceipt, settleReceipt } from './settle.ts';

export const CHAIN_LEASE = 'chain';

export interface ChainWorkerOptions {
  db: Db;
  chain: ChainDeps;
  logger: Logger;
  confirmations: number;
  platformRecipient: string | undefined;
  intervalMs?: number;
  leaseTtlMs?: number;
  startBlock?: bigint;
}

export class ChainWorker {
  readonly holder = `chain-${randomBytes(6).toString('hex')}`;
  readonly scanner: PaymentScanner;
  /** What the last pass did, for /healthz, the bench and the logs. */
  lastPass: PassStats | undefined;
  /** Receipts whose money waits at its payment address because nobody here can pay a sweep's gas. */
  sweepsWaiting = 0;
  private readonly loop: LeasedLoop;

  constructor(private readonly o: ChainWorkerOptions) {
    this.scanner = new PaymentScanner({
      db: o.db,
      chain: o.chain,
      logger: o.logger,
      platformRecipient: o.platformRecipient,
      startBlock: o.startBlock,
      maxRange: o.chain.dev !== undefined ? 2000n : 20n,
    });
    // A steady interval; while passes fail (RPC down or stalling), back off up to 30 s.
    this.loop = new LeasedLoop({
      db: o.db,
      logger: o.logger,
      lease: CHAIN_LEASE,
      holder: this.holder,
      what: 'chain worker',
      intervalMs: o.intervalMs ?? 250,
      maxBackoffMs: 30_000,
      leaseTtlMs: o.leaseTtlMs,
      pass: (now) => this.pass(now),
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
  }

  /** One pass: hold the lease, then follow payments. */
  async tick(now = Date.now()): Promise<void> {
    await this.loop.tick(now);
  }

  /** Steps 1 to 5 of the module comment. */
  async pass(now = Date.now()): Promise<PassStats> {
    const { db, chain, logger } = this.o;
    const cpu = process.cpuUsage();
    // The head first: a payment in a block up to it was sent to an address its buyer read from a
    // receipt committed before, which the filling then sees.
    const head = await this.scanner.head();
    const factory = chain.paymentFactory;
    if (factory !== undefined) await fillPayAddresses(db, factory);
    const scan = await this.scanner.pass(head);
    const watched = await db.select({ wallet: receiptWatch.wallet, receiptId: receiptWatch.receiptId }).from(receiptWatch).limit(WATCH_PER_PASS);
    const keys = new Map<string, ReceiptKey>([...watched, ...scan.touched].map((k) => [keyOf(k), k]));
    const context = {
      token: chain.usdc.address.toLowerCase(),
      decimals: chain.usdc.decimals,
      head: scan.head,
      confirmations: this.o.confirmations,
      logger,
    };
    let waiting = 0;
    let sweeps = 0;
    for (const key of keys.values()) {
      const outcome = await db.transaction((tx) => settleReceipt(tx, key, { ...context, now: Date.now() }));
      if (outcome.unswept === 0n || outcome.payAddress === null) continue;
      const sent = await this.sweep(key, scan.head, now);
      if (sent === 'no_gas') waiting++;
      if (sent === 'sent') sweeps++;
    }
    this.sweepsWaiting = waiting;
    const expired = await this.expire(now);
    const hints = await followHints(db, chain, scan.head, now);
    const used = process.cpuUsage(cpu);
    this.lastPass = {
      head: scan.head,
      settled: keys.size,
      sweeps,
      expired,
      hints,
      rpcCalls: scan.rpcCalls + hints + sweeps,
      cpuMicros: used.user + used.system,
    };
    return this.lastPass;
  }

  /**
   * Sends the sweep of a receipt's payment address into its split, unless one was sent recently
   * and has not shown up yet. The money is safe at the address meanwhile: only the split can get it.
   */
  private async sweep(key: ReceiptKey, scanned: bigint, now: number): Promise<'sent' | 'pending' | 'no_gas'> {
    const { db, chain, logger } = this.o;
    const { walletClient, paymentFactory } = chain;
    if (walletClient === undefined || paymentFactory === undefined) return 'no_gas';
    const [watch] = await db.select().from(receiptWatch).where(and(eq(receiptWatch.wallet, key.wallet), eq(receiptWatch.receiptId, key.receiptId)));
    if (watch?.sweepTx != null && watch.sweepSentAt != null && (await this.sweepPending(watch.sweepTx as Hex, watch.sweepSentAt, scanned, now))) {
      return 'pending';
    }
    const [split] = await db.select({ address: splitConfigs.address }).from(splitConfigs).where(eq(splitConfigs.wallet, key.wallet));
    if (split?.address == null) return 'no_gas';
    const hash: Hex = await sendSerially(walletClient, () =>
      walletClient.writeContract({
        address: paymentFactory,
        abi: paymentForwarderFactoryAbi,
        functionName: 'sweep',
        args: [split.address as Address, paymentSalt(key.wallet, key.receiptId), chain.usdc.address],
      }),
    );
    await db
      .update(receiptWatch)
      .set({ sweepTx: hash, sweepSentAt: now })
      .where(and(eq(receiptWatch.wallet, key.wallet), eq(receiptWatch.receiptId, key.receiptId)));
    logger.info({ wallet: key.wallet, receiptId: key.receiptId, tx: hash }, 'sweep sent');
    return 'sent';
  }

  /**
   * Whether the last sweep sent may still land: mined after the scanned head (the next pass reads
   * it), or waiting in the node's pool for less than SWEEP_RETRY_MS. A sweep the node no longer
   * knows (a reorganisation dropped it) or that is mined and read is not pending.
   */
  private async sweepPending(hash: Hex, sentAt: number, scanned: bigint, now: number): Promise<boolean> {
    const { publicClient } = this.o.chain;
    const mined = await publicClient.getTransactionReceipt({ hash }).catch(() => null);
    if (mined !== null) return mined.blockNumber > scanned;
    const known = await publicClient.getTransaction({ hash }).catch(() => null);
    return known !== null && now - sentAt < SWEEP_RETRY_MS;
  }

  /**
   * Receipts whose time ran out with nothing received: failed, exception expired. The query reads
   * receipts_expiry_idx, which holds only receipts that can still expire, so receipts that never
   * will cost a pass nothing and cannot fill its limit; expireReceipt decides again under the lock.
   */
  private async expire(now: number): Promise<number> {
    const { db } = this.o;
    const due = await db
      .select({ wallet: receipts.wallet, receiptId: receipts.id })
      .from(receipts)
      .where(and(receiptCanExpire(receipts), lte(receipts.expiresAt, now)))
      .limit(EXPIRE_PER_PASS);
    let expired = 0;
    for (const r of due) {
      if (await db.transaction((tx) => expireReceipt(tx, r, now))) expired++;
    }
    return expired;
  }
}

export interface PassStats {
  head: bigint;
  settled: number;
  sweeps: number;
  expired: number;
  hints: number;
  rpcCalls: number;
  cpuMicros: number;
}

/** Receipts settled per pass besides those whose transfers just changed. */
const WATCH_PER_PASS = 1000;
/** Receipts expired per pass at most; the rest wait for the next. */
export const EXPIRE_PER_PASS = 500;
/** A sweep not mined after this long is sent again. */
const SWEEP_RETRY_MS = 60_000;
