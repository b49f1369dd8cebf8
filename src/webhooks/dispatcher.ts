/**
 * Delivers due webhooks. Only the holder of the `webhooks` lease dispatches, so two instances
 * never send the same attempt; every attempt is logged and failures retry on the outbox schedule.
 *
 * One merchant's slow or dead endpoints never delay another merchant's deliveries:
 * - the claim loop never waits for a send: attempts run on their own, and each pass only looks for
 *   more work (every `intervalMs`, and as soon as an attempt ends), under the `webhooks` lease
 *   (src/workers/leased-loop.ts, as the chain worker);
 * - each attempt has one deadline (`timeoutMs`) for the whole of it;
 * - in flight at once: at most `perEndpoint` attempts to one endpoint, `perMerchant` for one
 *   merchant, `maxInFlight` in all; an endpoint or merchant at its bound is left out of the pass;
 * - what is due is taken round-robin over merchants, then over each merchant's endpoints
 *   (outbox.ts `dueDeliveries`), so a merchant's backlog takes turns with everyone else's.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db } from '../db/client.ts';
import { LeasedLoop } from '../workers/leased-loop.ts';
import { dueDeliveries, recordAttempt, TEST_EVENT_TYPE, type DueDelivery } from './outbox.ts';
import { eventOf } from './events.ts';
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
  private stopped = true;
  private readonly inFlight = new Map<string, InFlight>();
  private readonly perEndpointCount = new Map<string, number>();
  private readonly perWalletCount = new Map<string, number>();
  private readonly limits: typeof DISPATCH_DEFAULTS;
  private readonly loop: LeasedLoop;

  constructor(private readonly o: DispatcherOptions) {
    this.limits = {
      intervalMs: o.intervalMs ?? DISPATCH_DEFAULTS.intervalMs,
      timeoutMs: o.timeoutMs ?? DISPATCH_DEFAULTS.timeoutMs,
      perEndpoint: Math.max(1, o.perEndpoint ?? DISPATCH_DEFAULTS.perEndpoint),
      perMerchant: Math.max(1, o.perMerchant ?? DISPATCH_DEFAULTS.perMerchant),
      maxInFlight: Math.max(1, o.maxInFlight ?? DISPATCH_DEFAULTS.maxInFlight),
      batch: Math.max(1, o.batch ?? DISPATCH_DEFAULTS.batch),
    };
    // While passes fail (the database away), back off up to 10 s: a query every few seconds.
    this.loop = new LeasedLoop({
      db: o.db,
      logger: o.logger,
      lease: WEBHOOK_LEASE,
      holder: this.holder,
      what: 'webhook dispatcher',
      intervalMs: this.limits.intervalMs,
      maxBackoffMs: 10_000,
      leaseTtlMs: o.leaseTtlMs,
      // The loop never waits for the attempts a pass starts: they run on their own.
      pass: (now) => this.claim(now),
    });
  }

  get isLeader(): boolean {
    return this.loop.isLeader;
  }

  /** Attempts under way now. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  start(): void {
    this.stopped = false;
    this.loop.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // Each attempt ends by its deadline, which the lease outlives; the lease goes after them.
    await this.loop.stop(() => Promise.all([...this.inFlight.values()].map((f) => f.done)));
  }

  /**
   * One pass, waiting for the attempts it starts (tests and tools; the loop does not wait).
   * Returns how many were attempted.
   */
  async tick(now = Date.now()): Promise<number> {
    if (!(await this.loop.hold(now))) return 0;
    const started = await this.claim(now);
    await Promise.all(started);
    return started.length;
  }

  /** Starts what is due and has room, as leader. Returns the attempts started. */
  private async claim(now: number): Promise<Promise<void>[]> {
    if (!this.loop.isLeader) return [];
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
    const timeoutMs = Math.min(this.limits.timeoutMs, this.loop.leaderUntil - Date.now() - LEASE_MARGIN_MS);
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
        if (!this.stopped) this.loop.kick();
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
    // The event as GET /api/events/{id} answers it (src/webhooks/events.ts): one shape for both.
    const body = JSON.stringify(eventOf({ id: d.eventId, type: d.type, createdAt: d.eventCreatedAt, payload: d.payload }));
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
