/**
 * Fixed one-minute windows per subscription (or per client address for credential-free routes).
 * In memory by default; in Redis when REDIS_URL is set, so every instance shares one budget.
 */
import type { Redis } from 'ioredis';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix ms when the window resets. */
  resetAt: number;
}

export interface RateLimiter {
  readonly kind: 'memory' | 'redis';
  hit(key: string, limit: number, now?: number): Promise<RateDecision>;
  /** Whether one more hit would still be allowed, without counting one. */
  peek(key: string, limit: number, now?: number): Promise<RateDecision>;
  close(): Promise<void>;
}

const WINDOW_MS = 60_000;

function decide(count: number, limit: number, windowStart: number): RateDecision {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetAt: windowStart + WINDOW_MS,
  };
}

export class MemoryRateLimiter implements RateLimiter {
  readonly kind = 'memory' as const;
  private readonly counts = new Map<string, number>();
  private window = 0;

  hit(key: string, limit: number, now = Date.now()): Promise<RateDecision> {
    const windowStart = now - (now % WINDOW_MS);
    if (windowStart !== this.window) {
      // A new window: every counter of the previous one is stale.
      this.counts.clear();
      this.window = windowStart;
    }
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    return Promise.resolve(decide(count, limit, windowStart));
  }

  peek(key: string, limit: number, now = Date.now()): Promise<RateDecision> {
    const windowStart = now - (now % WINDOW_MS);
    const count = windowStart === this.window ? (this.counts.get(key) ?? 0) : 0;
    return Promise.resolve(decide(count + 1, limit, windowStart));
  }

  close(): Promise<void> {
    this.counts.clear();
    return Promise.resolve();
  }
}

/**
 * A counter increment by ARGV[2] and its expiry, atomically, as a single command: a script rather
 * than MULTI/INCRBY/PEXPIRE/EXEC, which is four commands for Redis to parse and ioredis to track.
 * The expiry is set whenever the key has none, so a counter can never outlive its window.
 */
const HIT_SCRIPT = `
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

type HitCommand = (key: string, ttlMs: number, hits: number) => Promise<number>;

/** A hit waiting for the next write; its limit and window are its pending entry's. */
type Waiter = (decision: RateDecision) => void;

/**
 * Places in a counter's sequence that this instance reserved in Redis and has not handed out yet,
 * from `next` to `end`, in blocks of consecutive places.
 */
interface Allowance {
  windowStart: number;
  blocks: { next: number; end: number }[];
  /** The places left over all the blocks. */
  left: number;
  /** The size of the last reservation: the next is asked for when half of that is left. */
  lease: number;
  /** A reservation for more is in the next write or on its way. */
  refilling: boolean;
}

/** Hits on one counter in one turn from which the next increment also reserves places ahead. */
const LEASE_FROM_HITS = 4;
/** Places reserved ahead per hit of the turn that asked (enough for several turns like it)... */
const LEASE_PER_HIT = 8;
/** ...and at most this share of the limit, so the places an instance holds unused are at most 2% of the budget. */
const LEASE_LIMIT_DIVISOR = 50;

/**
 * Places to reserve ahead with an increment for `hits` hits of one turn: none for a counter that
 * is not busy, or whose limit is too small for a reservation to be a small share of it; else
 * enough for the next several turns.
 */
export function leaseFor(hits: number, limit: number): number {
  if (hits < LEASE_FROM_HITS) return 0;
  return Math.min(hits * LEASE_PER_HIT, Math.floor(limit / LEASE_LIMIT_DIVISOR));
}

/**
 * Redis counters. The hits on one counter within an event-loop turn (a subscription's concurrent
 * requests) go as one increment by their number, and each request gets its own place in the
 * sequence, as if each had incremented alone: Redis applies increments one after another either
 * way, and the budget and the 429s are the same. The counters of one turn share one write.
 *
 * A busy counter also reserves places ahead (leaseFor): at least four hits in a turn, on a limit
 * of at least 50 a minute. The increment counts them in Redis with the turn's hits, and the next
 * requests on this instance take them without a round trip; a new reservation is asked for when
 * half of one is left, so a steady stream never waits on Redis. Every place is still counted in
 * Redis before a request is served on it, so no instance serves past the shared budget; the cost
 * is that places an instance holds unused (at most 3% of the limit each: a reservation of at most
 * 2% and what was left of the one before) are spent for the others, and its last window's
 * leftovers lapse with the window.
 *
 * When Redis cannot be reached the limiter fails open: the request is served and the failure is
 * reported through `onError`, because refusing every paying customer during a cache outage costs
 * more than a minute of unmetered traffic.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly kind = 'redis' as const;
  private readonly hitCommand: HitCommand;
  /** Counter key → the hits waiting for this turn's increment, in the order they came. */
  private pending = new Map<string, { limit: number; windowStart: number; waiters: Waiter[]; refill: number }>();
  /** Counter key → the places reserved ahead for it (busy counters only). */
  private readonly allowances = new Map<string, Allowance>();
  private scheduled = false;
  /** Requests served without being counted because Redis failed or did not answer in time. */
  servedUnmetered = 0;

  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'splitline:rl:',
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    // EVALSHA, falling back to EVAL when Redis has lost its script cache (a restart).
    redis.defineCommand('splitlineRateHits', { numberOfKeys: 1, lua: HIT_SCRIPT });
    const command = (redis as unknown as { splitlineRateHits: HitCommand }).splitlineRateHits;
    this.hitCommand = command.bind(redis);
  }

  hit(key: string, limit: number, now = Date.now()): Promise<RateDecision> {
    const windowStart = now - (now % WINDOW_MS);
    const counter = `${this.prefix}${key}:${windowStart}`;
    const place = this.takeReserved(counter, windowStart, limit);
    if (place !== undefined) return Promise.resolve(decide(place, limit, windowStart));
    return new Promise((resolve) => {
      this.entry(counter, limit, windowStart).waiters.push(resolve);
    });
  }

  /** A place reserved ahead for this counter, if one is left; asks for more when half a reservation is left. */
  private takeReserved(counter: string, windowStart: number, limit: number): number | undefined {
    const allowance = this.allowances.get(counter);
    if (allowance === undefined) return undefined;
    if (allowance.windowStart !== windowStart) {
      this.allowances.delete(counter);
      return undefined;
    }
    const block = allowance.blocks[0];
    if (block === undefined) return undefined;
    const place = block.next++;
    if (block.next > block.end) allowance.blocks.shift();
    allowance.left -= 1;
    if (!allowance.refilling && allowance.left * 2 <= allowance.lease) {
      allowance.refilling = true;
      this.entry(counter, limit, windowStart).refill = allowance.lease;
    }
    return place;
  }

  /** The counter's share of the next write, scheduling the write. */
  private entry(counter: string, limit: number, windowStart: number) {
    let entry = this.pending.get(counter);
    if (entry === undefined) {
      entry = { limit, windowStart, waiters: [], refill: 0 };
      this.pending.set(counter, entry);
    }
    if (!this.scheduled) {
      this.scheduled = true;
      // After the I/O callbacks of this turn, so every request they started has asked by then.
      setImmediate(this.flush);
    }
    return entry;
  }

  async peek(key: string, limit: number, now = Date.now()): Promise<RateDecision> {
    const windowStart = now - (now % WINDOW_MS);
    try {
      const count = Number((await this.redis.get(`${this.prefix}${key}:${windowStart}`)) ?? 0);
      return decide(count + 1, limit, windowStart);
    } catch (err) {
      // Open, as hit() is when Redis is away.
      this.servedUnmetered += 1;
      this.onError(err);
      return { allowed: true, limit, remaining: limit, resetAt: windowStart + WINDOW_MS };
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const batch = [...this.pending].map(([counter, e]) => {
      // Sized on this turn's hits, and at least as large as the reservation being refilled.
      const lease = Math.max(leaseFor(e.waiters.length, e.limit), e.refill);
      return { counter, ...e, lease };
    });
    this.pending = new Map();
    this.dropStaleAllowances();
    const ttlMs = WINDOW_MS + 1000;
    if (batch.length === 1) {
      const b = batch[0]!;
      void this.settle(b, this.hitCommand(b.counter, ttlMs, b.waiters.length + b.lease));
      return;
    }
    // Several subscriptions in one turn: one write for all their increments.
    const pipeline = this.redis.pipeline() as unknown as { splitlineRateHits: HitCommand; exec(): Promise<[Error | null, unknown][] | null> };
    for (const b of batch) void pipeline.splitlineRateHits(b.counter, ttlMs, b.waiters.length + b.lease);
    const results = pipeline.exec();
    batch.forEach((b, i) => {
      void this.settle(
        b,
        results.then((all) => {
          const [err, count] = all?.[i] ?? [new Error('Redis returned no reply for the increment'), undefined];
          if (err) throw err;
          return count as number;
        }),
      );
    });
  };

  /** Reservations of windows that have ended are worth nothing: their counters have expired. */
  private dropStaleAllowances(): void {
    const now = Date.now();
    const current = now - (now % WINDOW_MS);
    for (const [counter, a] of this.allowances) if (a.windowStart < current) this.allowances.delete(counter);
  }

  /**
   * Each waiter's decision from the counter's total after the increment, and the places reserved
   * ahead, up to the limit; open when Redis failed.
   */
  private async settle(b: { counter: string; limit: number; windowStart: number; waiters: Waiter[]; lease: number }, total: Promise<number>): Promise<void> {
    let count: number;
    try {
      count = Number(await total);
    } catch (err) {
      const allowance = this.allowances.get(b.counter);
      if (allowance !== undefined) allowance.refilling = false;
      this.onError(err);
      // A reservation ahead that failed served nobody; the next hits ask again.
      this.servedUnmetered += b.waiters.length;
      for (const resolve of b.waiters) resolve({ allowed: true, limit: b.limit, remaining: b.limit, resetAt: b.windowStart + WINDOW_MS });
      return;
    }
    const before = count - b.lease - b.waiters.length;
    b.waiters.forEach((resolve, i) => resolve(decide(before + i + 1, b.limit, b.windowStart)));
    const next = before + b.waiters.length + 1;
    const end = Math.min(count, b.limit);
    let allowance = this.allowances.get(b.counter);
    if (allowance !== undefined) allowance.refilling = false;
    if (end < next) return;
    if (allowance === undefined) {
      allowance = { windowStart: b.windowStart, blocks: [], left: 0, lease: 0, refilling: false };
      this.allowances.set(b.counter, allowance);
    }
    allowance.blocks.push({ next, end });
    allowance.left += end - next + 1;
    allowance.lease = b.lease;
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
