/**
 * Delivers due webhooks. Only the holder of the `webhooks` lease dispatches, so two instances
 * never send the same attempt; every attempt is logged and failures retry on the outbox schedule.
 *
 * One merchant's slow or dead endpoints never delay another merchant's deliveries:
 * - the claim loop never waits for a send: attempts run on their own, and each pass only looks for
 *   more work (every `intervalMs`, and as soon as an attempt ends);
 * - each attempt has one deadline (`timeoutMs`) for the whole of it;
 * - in flight at once: at most `perEndpoint` attempts to one endpoint, `perMerchant` for one
 *   merchant, `maxInFlight` in all; an endpoint or merchant at its bound is left out of the pass;
 * - what is due is taken round-robin over merchants, then over each merchant's endpoints
 *   (outbox.ts `dueDeliveries`), so a merchant's backlog takes turns with everyone else's.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { isDbDown, type Db } from '../db/client.ts';
import { acquireLease, releaseLease } from '../workers/lease.ts';
import { dueDeliveries, recordAttempt, TEST_EVENT_TYPE, type DueDelivery } from './outbox.ts';
import { postWebhook } from './send.ts';
import { webhookHeaders } from './sign.ts';

export interface DispatcherOptions {
  db: Db;
  logger: Logger;
  allowPrivate: boolean;
  /** Loopback targets allowed (the dev chain; src/webhooks/ssrf.ts webhookTargetPolicy). */
  allowLoopback?: boolean;
  /** How often due deliveries are looked for (also right after each attempt ends). */
  intervalMs?: number;
  leaseTtlMs?: number;
  /** Longest one attempt may take, from lookup to answer; capped by the lease time left. */
  timeoutMs?: number;
  /** Attempts in flight to one endpoint at most. */
  perEndpoint?: number;
  /** Attempts in flight for one merchant at most, all its endpoints together. */
  perMerchant?: number;
  /** Attempts in flight at most, all merchants together. */
  maxInFlight?: number;
  /** Most deliveries one pass starts. */
  batch?: number;
}

export const WEBHOOK_LEASE = 'webhooks';
export const DISPATCH_DEFAULTS = { intervalMs: 250, timeoutMs: 5_000, perEndpoint: 2, perMerchant: 10, maxInFlight: 64, batch: 32 };
/** Kept free at the end of a lease for recording an attempt. */
const LEASE_MARGIN_MS = 1_000;

interface InFlight {
  endpoint: string;
  wallet: string;
  done: Promise<void>;
}

export class WebhookDispatcher {
  readonly holder = `dispatcher-${randomBytes(6).toString('hex')}`;
  private timer: NodeJS.Timeout | undefined;
  /** The pass running now, if any: one at a time. */
  private pass: Promise<unknown> | null = null;
  /** Something asked for a pass while one was running: run another when it ends. */
  private again = false;
  /** Passes failed in a row, and when the last failure was logged. */
  private failures = 0;
  private lastFailureLog = 0;
  private leaderUntil = 0;
  private stopped = true;
  private readonly inFlight = new Map<string, InFlight>();
  private readonly perEndpointCount = new Map<string, number>();
  private readonly perWalletCount = new Map<string, number>();
  private readonly limits: typeof DISPATCH_DEFAULTS;

  constructor(private readonly o: DispatcherOptions) {
    this.limits = {
      intervalMs: o.intervalMs ?? DISPATCH_DEFAULTS.intervalMs,
      timeoutMs: o.timeoutMs ?? DISPATCH_DEFAULTS.timeoutMs,
      perEndpoint: Math.max(1, o.perEndpoint ?? DISPATCH_DEFAULTS.perEndpoint),
      perMerchant: Math.max(1, o.perMerchant ?? DISPATCH_DEFAULTS.perMerchant),
      maxInFlight: Math.max(1, o.maxInFlight ?? DISPATCH_DEFAULTS.maxInFlight),
      batch: Math.max(1, o.batch ?? DISPATCH_DEFAULTS.batch),
    };
  }

  get isLeader(): boolean {
    return Date.now() < this.leaderUntil;
  }

  /** Attempts under way now. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  start(): void {
    this.stopped = false;
    this.runSoon(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.pass;
    // Each attempt ends by its deadline, which the lease outlives.
    await Promise.all([...this.inFlight.values()].map((f) => f.done));
    if (this.leaderUntil > 0) await releaseLease(this.o.db, WEBHOOK_LEASE, this.holder).catch(() => undefined);
    this.leaderUntil = 0;
  }

  /**
   * One pass, waiting for the attempts it starts (tests and tools; the loop does not wait).
   * Returns how many were attempted.
   */
  async tick(now = Date.now()): Promise<number> {
    const started = await this.claim(now);
    await Promise.all(started);
    return started.length;
  }

  private runSoon(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.runPass(), delayMs);
  }

  private runPass(): void {
    if (this.stopped) return;
    if (this.pass !== null) {
      this.again = true;
      return;
    }
    let failed = false;
    this.pass = this.claim(Date.now())
      .then(() => {
        this.failures = 0;
      })
      .catch((err: unknown) => {
        failed = true;
        this.failures++;
        // While the database is away every pass fails: say so once in a while, not four times a second.
        const down = isDbDown(err);
        if (!down || Date.now() - this.lastFailureLog > 30_000) {
          this.lastFailureLog = Date.now();
          this.o.logger.warn({ err, failures: this.failures }, down ? 'webhook dispatch paused: the database is unavailable' : 'webhook dispatch pass failed');
        }
      })
      .finally(() => {
        this.pass = null;
        if (this.stopped) return;
        const again = this.again;
        this.again = false;
        // Back off after failures (up to 10 s), so an outage costs a query every few seconds.
        const backoff = Math.min(this.limits.intervalMs * 2 ** Math.min(this.failures, 6), 10_000);
        this.runSoon(failed ? backoff : again ? 0 : this.limits.intervalMs);
      });
  }

  /** Renews or takes the lease, then starts what is due and has room. Returns the attempts started. */
  private async claim(now: number): Promise<Promise<void>[]> {
    const ttl = this.o.leaseTtlMs ?? 15_000;
    if (this.leaderUntil - now < (ttl * 2) / 3) {
      const won = await acquireLease(this.o.db, WEBHOOK_LEASE, this.holder, ttl, now);
      if (won && this.leaderUntil === 0) this.o.logger.info({ holder: this.holder }, 'webhook dispatcher is leader');
      this.leaderUntil = won ? now + ttl : 0;
    }
    if (!this.isLeader) return [];
    const room = this.limits.maxInFlight - this.inFlight.size;
    if (room <= 0) return [];
    const full = (counts: Map<string, number>, max: number) => [...counts].filter(([, n]) => n >= max).map(([k]) => k);
    const due = await dueDeliveries(this.o.db, now, {
      limit: Math.min(this.limits.batch, room),
      perEndpoint: this.limits.perEndpoint,
      perMerchant: this.limits.perMerchant,
      skipDeliveries: [...this.inFlight.keys()],
      skipEndpoints: full(this.perEndpointCount, this.limits.perEndpoint).map((k) => k.slice(k.indexOf('/') + 1)),
      skipWallets: full(this.perWalletCount, this.limits.perMerchant),
    });
    // A send must end, and be recorded, before the lease it started under can lapse: otherwise
    // another instance could take the lease, find the delivery still pending and send it again.
    const timeoutMs = Math.min(this.limits.timeoutMs, this.leaderUntil - Date.now() - LEASE_MARGIN_MS);
    if (timeoutMs <= 0) return [];
    const started: Promise<void>[] = [];
    for (const d of due) {
      if (this.inFlight.has(d.id)) continue;
      const endpoint = `${d.wallet}/${d.endpointId}`;
      // The query counted none of what is in flight; an endpoint or merchant may have less room.
      if ((this.perEndpointCount.get(endpoint) ?? 0) >= this.limits.perEndpoint) continue;
      if ((this.perWalletCount.get(d.wallet) ?? 0) >= this.limits.perMerchant) continue;
      if (this.inFlight.size >= this.limits.maxInFlight) break;
      started.push(this.launch(d, endpoint, timeoutMs));
    }
    return started;
  }

  private launch(d: DueDelivery, endpoint: string, timeoutMs: number): Promise<void> {
    bump(this.perEndpointCount, endpoint, 1);
    bump(this.perWalletCount, d.wallet, 1);
    const done = this.deliver(d, timeoutMs).then(
      () => {
        this.release(d, endpoint);
        // Room was made: more of this endpoint's work may be waiting.
        if (!this.stopped) this.runPass();
      },
      (err: unknown) => {
        // Not recorded (the database is away): the delivery stays due and goes out again on a
        // later pass, not at once.
        this.release(d, endpoint);
        this.o.logger.warn({ err, delivery: d.id }, 'webhook attempt not recorded; it will be sent again');
      },
    );
    this.inFlight.set(d.id, { endpoint, wallet: d.wallet, done });
    return done;
  }

  private release(d: DueDelivery, endpoint: string): void {
    this.inFlight.delete(d.id);
    bump(this.perEndpointCount, endpoint, -1);
    bump(this.perWalletCount, d.wallet, -1);
  }

  private async deliver(d: DueDelivery, timeoutMs: number): Promise<void> {
    const body = JSON.stringify(d.payload);
    const headers = webhookHeaders(d.secret, d.eventId, Math.floor(Date.now() / 1000), body);
    const result = await postWebhook(d.url, headers, body, {
      allowPrivate: this.o.allowPrivate,
      allowLoopback: this.o.allowLoopback ?? false,
      timeoutMs,
    });
    const status = await recordAttempt(this.o.db, d, result);
    const log = { delivery: d.id, event: d.eventId, endpoint: d.endpointId, statusCode: result.statusCode, attempt: d.attempts + 1 };
    if (status === 'failed' && d.type === TEST_EVENT_TYPE) this.o.logger.info({ ...log, error: result.error }, 'webhook test event failed');
    else if (status === 'failed') this.o.logger.error({ ...log, error: result.error }, 'webhook delivery gave up');
    else if (!result.ok) this.o.logger.warn({ ...log, error: result.error }, 'webhook delivery failed; will retry');
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
