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

interface Waiter {
  limit: number;
  windowStart: number;
  resolve: (decision: RateDecision) => void;
}

/**
 * Redis counters. The hits on one counter within an event-loop turn (a subscription's concurrent
 * requests) go as one increment by their number, and each request gets its own place in the
 * sequence, as if each had incremented alone: Redis applies increments one after another either
 * way, and the budget and the 429s are the same. The counters of one turn share one write. When
 * Redis cannot be reached the limiter fails open: the request is served and the failure is
 * reported through `onError`, because refusing every paying customer during a cache outage costs
 * more than a minute of unmetered traffic.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly kind = 'redis' as const;
  private readonly hitCommand: HitCommand;
  /** Counter key → the hits waiting for this turn's increment, in the order they came. */
  private pending = new Map<string, Waiter[]>();
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
    return new Promise((resolve) => {
      const waiting = this.pending.get(counter);
      if (waiting === undefined) this.pending.set(counter, [{ limit, windowStart, resolve }]);
      else waiting.push({ limit, windowStart, resolve });
      if (!this.scheduled) {
        this.scheduled = true;
        // After the I/O callbacks of this turn, so every request they started has asked by then.
        setImmediate(this.flush);
      }
    });
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
    const batch = [...this.pending];
    this.pending = new Map();
    const ttlMs = WINDOW_MS + 1000;
    if (batch.length === 1) {
      const [counter, waiters] = batch[0]!;
      void this.settle(waiters, this.hitCommand(counter, ttlMs, waiters.length));
      return;
    }
    // Several subscriptions in one turn: one write for all their increments.
    const pipeline = this.redis.pipeline() as unknown as { splitlineRateHits: HitCommand; exec(): Promise<[Error | null, unknown][] | null> };
    for (const [counter, waiters] of batch) void pipeline.splitlineRateHits(counter, ttlMs, waiters.length);
    const results = pipeline.exec();
    batch.forEach(([, waiters], i) => {
      void this.settle(
        waiters,
        results.then((all) => {
          const [err, count] = all?.[i] ?? [new Error('Redis returned no reply for the increment'), undefined];
          if (err) throw err;
          return count as number;
        }),
      );
    });
  };

  /** Each waiter's decision from the counter's total after their increments; open when Redis failed. */
  private async settle(waiters: Waiter[], total: Promise<number>): Promise<void> {
    let count: number;
    try {
      count = Number(await total);
    } catch (err) {
      this.servedUnmetered += waiters.length;
      this.onError(err);
      for (const w of waiters) w.resolve({ allowed: true, limit: w.limit, remaining: w.limit, resetAt: w.windowStart + WINDOW_MS });
      return;
    }
    const before = count - waiters.length;
    waiters.forEach((w, i) => w.resolve(decide(before + i + 1, w.limit, w.windowStart)));
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
