/**
 * The purge: on a timer started with the background workers, deletes sign-in challenges and
 * sessions that can never be used again, the daily split-deployment counters of past days, and
 * write ids and Idempotency-Key answers past their retention (src/db/write-claims.ts), and
 * webhook events past the events API's 30 days with their deliveries (src/webhooks/outbox.ts).
 * Every instance may run it; deleting what another instance already deleted changes nothing.
 */
import type { Logger } from 'pino';
import type { Db } from '../db/client.ts';
import { purgeDeployCounters } from '../domain/split-setup.ts';
import type { WriteClaims } from '../db/write-claims.ts';
import { purgeOldEvents } from '../webhooks/outbox.ts';
import type { AuthService } from './sessions.ts';

export const PURGE_INTERVAL_MS = 10 * 60_000;

export interface PurgeOptions {
  db: Db;
  auth: AuthService;
  /** The app's write-id claims, whose old ones go. */
  claims: WriteClaims;
  logger: Logger;
  intervalMs?: number;
  now?: () => number;
}

export class Purger {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly o: PurgeOptions) {}

  /** Purges at once, then every intervalMs, until stop(). */
  start(): void {
    if (this.timer !== undefined) return;
    const tick = () => {
      this.running ??= this.runOnce()
        .then(() => undefined)
        .catch((err: unknown) => this.o.logger.warn({ err }, 'purge of expired sessions and challenges failed; retrying later'))
        .finally(() => (this.running = undefined));
    };
    this.timer = setInterval(tick, this.o.intervalMs ?? PURGE_INTERVAL_MS);
    this.timer.unref();
    tick();
  }

  async runOnce(): Promise<{ nonces: number; sessions: number; counters: number; writeIds: number; idempotencyKeys: number; events: number }> {
    const now = this.o.now?.() ?? Date.now();
    const { nonces, sessions } = await this.o.auth.purgeExpired(now);
    const counters = await purgeDeployCounters(this.o.db, now);
    const writes = await this.o.claims.purge(this.o.db, now);
    const events = await purgeOldEvents(this.o.db, now);
    const purged = { nonces, sessions, counters, ...writes, events };
    if (Object.values(purged).some((n) => n > 0)) this.o.logger.debug(purged, 'purged expired rows');
    return purged;
  }

  /** Stops the timer and waits for a pass under way. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
