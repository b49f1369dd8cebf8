/**
 * The automatic payout loop: under the `payouts` lease, one instance at a time runs
 * src/payments/payouts.ts every PAYOUT_CHECK_MS. A loop of its own rather than a step of the chain
 * worker's pass, because a release waits for its block and the chain worker's pass never waits
 * for one. The lease only keeps the other instances idle; the once-per-interval rule is the
 * database's claim (src/payments/payouts.ts), which holds even when the lease changes hands.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChainDeps } from '../chain/client.ts';
import type { Deployer } from '../chain/deployer.ts';
import type { Db } from '../db/client.ts';
import { LeasedLoop } from '../workers/leased-loop.ts';
import { runAutoPayouts, type AutoPayout } from './payouts.ts';

export const PAYOUT_LEASE = 'payouts';
/** How often the leader looks for payouts due: intervals are whole hours, so a minute is prompt enough. */
export const PAYOUT_CHECK_MS = 60_000;

export class PayoutWorker {
  readonly holder = `payouts-${randomBytes(6).toString('hex')}`;
  private readonly loop: LeasedLoop;

  constructor(private readonly o: { db: Db; chain: ChainDeps; deployer: Deployer; logger: Logger; intervalMs?: number; leaseTtlMs?: number }) {
    this.loop = new LeasedLoop({
      db: o.db,
      logger: o.logger,
      lease: PAYOUT_LEASE,
      holder: this.holder,
      what: 'payout worker',
      intervalMs: o.intervalMs ?? PAYOUT_CHECK_MS,
      maxBackoffMs: 10 * (o.intervalMs ?? PAYOUT_CHECK_MS),
      leaseTtlMs: o.leaseTtlMs,
      pass: (now) => this.pass(now),
    });
  }

  /** One run, whether or not this instance leads (tests call it to stand for two instances at once). */
  pass(now = Date.now()): Promise<AutoPayout[]> {
    return runAutoPayouts(this.o, now);
  }

  /** One pass as the loop runs it: only while this instance holds the lease. */
  tick(now = Date.now()): Promise<void> {
    return this.loop.tick(now);
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
