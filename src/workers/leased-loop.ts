/**
 * The loop every background worker runs under a leader lease (src/workers/lease.ts): the chain
 * worker and the webhook dispatcher. One instance at a time holds the lease and runs passes; the
 * others renew nothing and stand by until it lapses.
 *
 * - There is only ever one timer or one pass. `kick()` during a pass asks for another as soon as
 *   it ends; a second timer would start a second loop that `stop()` could not end.
 * - Passes that fail back off exponentially, up to `maxBackoffMs`, and kicks wait for the
 *   back-off too, so a stream of requests cannot turn an outage into a busy loop.
 * - Every failed pass is logged, at warn when a run of failures starts and then at most every
 *   30 s while it lasts (the database away makes every pass fail), at debug otherwise; the
 *   recovery is logged with the count.
 * - The lease is renewed once two thirds of it are left, so a pass that ends normally never
 *   runs without it; `leaderUntil` tells a pass how long it may still act.
 */
import type { Logger } from 'pino';
import { type Db } from '../db/client.ts';
import { isDbDown } from '../lib/db-errors.ts';
import { acquireLease, releaseLease } from './lease.ts';

export interface LeasedLoopOptions {
  db: Db;
  logger: Logger;
  /** The lease's name: one holder per name across all instances. */
  lease: string;
  holder: string;
  /** For the logs: "chain worker", "webhook dispatcher". */
  what: string;
  /** Between passes while they succeed. */
  intervalMs: number;
  /** The wait after a successful pass when it should not be intervalMs (a chain's next block is due). */
  nextIntervalMs?: () => number | undefined;
  /** The longest wait after failures. */
  maxBackoffMs: number;
  leaseTtlMs?: number;
  /** One pass, run only while this instance holds the lease. */
  pass(now: number): Promise<unknown>;
}

const FAILURE_LOG_EVERY_MS = 30_000;

export class LeasedLoop {
  /** Unix ms until which this instance holds the lease; 0 when it does not. */
  leaderUntil = 0;
  /** Unix ms the next pass is due at; undefined while a pass runs or the loop is stopped. */
  nextPassAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = true;
  private inPass = false;
  private kicked = false;
  private failures = 0;
  private lastFailureLog = 0;
  private readonly ttl: number;

  constructor(private readonly o: LeasedLoopOptions) {
    this.ttl = o.leaseTtlMs ?? 15_000;
  }

  get isLeader(): boolean {
    return Date.now() < this.leaderUntil;
  }

  /** Passes failed in a row. */
  get failing(): number {
    return this.failures;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** A pass soon rather than at the next interval; while passes fail, the back-off still holds. */
  kick(): void {
    if (this.stopped || this.failures > 0) return;
    if (this.inPass) {
      this.kicked = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  /**
   * Ends the loop after the pass under way, then waits for `drain` (work the passes started and
   * did not wait for), and only then gives the lease up: what started under it ends under it.
   */
  async stop(drain?: () => Promise<unknown>): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.nextPassAt = undefined;
    await this.running;
    await drain?.();
    if (this.leaderUntil > 0) await releaseLease(this.o.db, this.o.lease, this.o.holder).catch(() => undefined);
    this.leaderUntil = 0;
  }

  /** Takes or renews the lease when due; true while this instance holds it. */
  async hold(now = Date.now()): Promise<boolean> {
    if (this.leaderUntil - now < (this.ttl * 2) / 3) {
      const won = await acquireLease(this.o.db, this.o.lease, this.o.holder, this.ttl, now);
      if (won && this.leaderUntil === 0) this.o.logger.info({ holder: this.o.holder }, `${this.o.what} is leader`);
      this.leaderUntil = won ? now + this.ttl : 0;
    }
    return now < this.leaderUntil;
  }

  /** One pass as the loop runs it: the lease, then the work if this instance leads. */
  async tick(now = Date.now()): Promise<void> {
    if (await this.hold(now)) await this.o.pass(now);
  }

  private schedule(delayMs: number): void {
    this.nextPassAt = Date.now() + delayMs;
    this.timer = setTimeout(() => {
      this.nextPassAt = undefined;
      if (this.stopped) return;
      this.inPass = true;
      this.running = this.tick()
        .then(() => this.succeeded())
        .catch((err: unknown) => this.failed(err))
        .finally(() => {
          this.inPass = false;
          const next = this.kicked && this.failures === 0 ? 0 : this.nextDelayMs;
          this.kicked = false;
          if (!this.stopped) this.schedule(next);
        });
    }, delayMs);
  }

  private succeeded(): void {
    if (this.failures > 0) this.o.logger.info({ failures: this.failures }, `${this.o.what} resumed`);
    this.failures = 0;
  }

  /** Every failed pass is logged: at warn when a run of failures starts and every 30 s of it, else at debug. */
  private failed(err: unknown): void {
    this.failures++;
    const now = Date.now();
    const quiet = this.failures > 1 && now - this.lastFailureLog <= FAILURE_LOG_EVERY_MS;
    if (!quiet) this.lastFailureLog = now;
    const fields = { err, failures: this.failures, retryInMs: this.nextDelayMs, databaseUnavailable: isDbDown(err) };
    if (quiet) this.o.logger.debug(fields, `${this.o.what} pass failed`);
    else this.o.logger.warn(fields, `${this.o.what} pass failed`);
  }

  /** The wait before the next pass: the steady interval, or after failures twice the last wait, up to maxBackoffMs. */
  get nextDelayMs(): number {
    const base = this.o.intervalMs;
    return this.failures === 0 ? (this.o.nextIntervalMs?.() ?? base) : Math.min(this.o.maxBackoffMs, base * 2 ** Math.min(this.failures, 16));
  }
}
