/**
 * Delivers due webhooks. Only the holder of the `webhooks` lease dispatches, so two instances
 * never send the same attempt; every attempt is logged and failures retry on the outbox schedule.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db } from '../db/client.ts';
import { acquireLease, releaseLease } from '../workers/lease.ts';
import { dueDeliveries, recordAttempt, type DueDelivery } from './outbox.ts';
import { postWebhook } from './send.ts';
import { webhookHeaders } from './sign.ts';

export interface DispatcherOptions {
  db: Db;
  logger: Logger;
  allowPrivate: boolean;
  intervalMs?: number;
  leaseTtlMs?: number;
  timeoutMs?: number;
  batch?: number;
}

export const WEBHOOK_LEASE = 'webhooks';
/** Kept free at the end of a lease for recording the attempts of a pass. */
const LEASE_MARGIN_MS = 1_000;

export class WebhookDispatcher {
  readonly holder = `dispatcher-${randomBytes(6).toString('hex')}`;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private leaderUntil = 0;
  private stopped = true;

  constructor(private readonly o: DispatcherOptions) {}

  get isLeader(): boolean {
    return Date.now() < this.leaderUntil;
  }

  start(): void {
    this.stopped = false;
    const loop = () => {
      if (this.stopped) return;
      this.running = this.tick()
        .catch((err: unknown) => this.o.logger.warn({ err }, 'webhook dispatch pass failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(loop, this.o.intervalMs ?? 250);
        });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    if (this.leaderUntil > 0) await releaseLease(this.o.db, WEBHOOK_LEASE, this.holder).catch(() => undefined);
    this.leaderUntil = 0;
  }

  /** One pass: renew or take the lease, then send what is due. Returns how many were attempted. */
  async tick(now = Date.now()): Promise<number> {
    const ttl = this.o.leaseTtlMs ?? 15_000;
    if (this.leaderUntil - now < (ttl * 2) / 3) {
      const won = await acquireLease(this.o.db, WEBHOOK_LEASE, this.holder, ttl, now);
      if (won && this.leaderUntil === 0) this.o.logger.info({ holder: this.holder }, 'webhook dispatcher is leader');
      this.leaderUntil = won ? now + ttl : 0;
    }
    if (!this.isLeader) return 0;
    const due = await dueDeliveries(this.o.db, now, this.o.batch ?? 20);
    // A send must end, and be recorded, before the lease it started under can lapse: otherwise
    // another instance could take the lease, find the delivery still pending and send it again.
    const timeoutMs = Math.min(this.o.timeoutMs ?? 10_000, this.leaderUntil - Date.now() - LEASE_MARGIN_MS);
    if (due.length === 0 || timeoutMs <= 0) return 0;
    await Promise.all(due.map((d) => this.deliver(d, timeoutMs)));
    return due.length;
  }

  private async deliver(d: DueDelivery, timeoutMs: number): Promise<void> {
    const body = JSON.stringify(d.payload);
    const headers = webhookHeaders(d.secret, d.eventId, Math.floor(Date.now() / 1000), body);
    const result = await postWebhook(d.url, headers, body, {
      allowPrivate: this.o.allowPrivate,
      timeoutMs,
    });
    const status = await recordAttempt(this.o.db, d, result);
    const log = { delivery: d.id, event: d.eventId, statusCode: result.statusCode, attempt: d.attempts + 1 };
    if (status === 'failed') this.o.logger.error({ ...log, error: result.error }, 'webhook delivery gave up');
    else if (!result.ok) this.o.logger.warn({ ...log, error: result.error }, 'webhook delivery failed; will retry');
  }
}
