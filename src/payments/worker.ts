/**
 * The chain worker: under the `chain` lease, one instance at a time verifies submitted payments
 * and indexes split transactions. Other instances stand by and take over when the lease lapses.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import type { Db } from '../db/client.ts';
import { acquireLease, releaseLease } from '../workers/lease.ts';
import { SplitIndexer } from './indexer.ts';
import { PaymentVerifier } from './verifier.ts';

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
  readonly verifier: PaymentVerifier;
  readonly indexer: SplitIndexer;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private leaderUntil = 0;
  private stopped = true;
  private failures = 0;
  /** A pass is running (between its timer firing and its end). */
  private inPass = false;
  /** kick() came during a pass: the next one starts as soon as it ends. */
  private kicked = false;

  constructor(private readonly o: ChainWorkerOptions) {
    this.verifier = new PaymentVerifier({ db: o.db, chain: o.chain, confirmations: o.confirmations, logger: o.logger });
    this.indexer = new SplitIndexer({ db: o.db, chain: o.chain, logger: o.logger, platformRecipient: o.platformRecipient, startBlock: o.startBlock });
  }

  get isLeader(): boolean {
    return Date.now() < this.leaderUntil;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /**
   * Runs a pass soon (after a buyer submits a transaction), instead of at the next interval.
   * There is only ever one timer or one pass: a kick during a pass asks that pass to schedule the
   * next at once (a second timer would start a second loop, which stop() could not end). While
   * passes fail, kicks wait for the backoff, so a stream of submissions cannot defeat it.
   */
  kick(): void {
    if (this.stopped || this.failures > 0) return;
    if (this.inPass) {
      this.kicked = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  private schedule(delay: number): void {
    this.timer = setTimeout(() => {
      if (this.stopped) return;
      this.inPass = true;
      this.running = this.tick()
        .then(() => {
          this.failures = 0;
        })
        .catch((err: unknown) => {
          this.failures++;
          this.o.logger.warn({ err, failures: this.failures }, 'chain worker pass failed');
        })
        .finally(() => {
          this.inPass = false;
          const next = this.kicked && this.failures === 0 ? 0 : this.backoff();
          this.kicked = false;
          if (!this.stopped) this.schedule(next);
        });
    }, delay);
  }

  /** Steady interval; after repeated failures (RPC down or stalling) back off up to 30 s. */
  private backoff(): number {
    const base = this.o.intervalMs ?? 250;
    return this.failures === 0 ? base : Math.min(30_000, base * 2 ** Math.min(this.failures, 7));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    if (this.leaderUntil > 0) await releaseLease(this.o.db, CHAIN_LEASE, this.holder).catch(() => undefined);
    this.leaderUntil = 0;
  }

  /** One pass: hold the lease, then verify and index. */
  async tick(now = Date.now()): Promise<void> {
    const ttl = this.o.leaseTtlMs ?? 15_000;
    if (this.leaderUntil - now < (ttl * 2) / 3) {
      const won = await acquireLease(this.o.db, CHAIN_LEASE, this.holder, ttl, now);
      if (won && this.leaderUntil === 0) this.o.logger.info({ holder: this.holder }, 'chain worker is leader');
      this.leaderUntil = won ? now + ttl : 0;
    }
    if (!this.isLeader) return;
    await this.indexer.pass();
    await this.verifier.pass();
  }
}
