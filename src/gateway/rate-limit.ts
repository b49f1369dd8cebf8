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

  async hit(key: string, limit: number, now = Date.now()): Promise<RateDecision> {
    const windowStart = now - (now % WINDOW_MS);
    if (windowStart !== this.window) {
      // A new window: every counter of the previous one is stale.
      this.counts.clear();
      this.window = windowStart;
    }
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    return decide(count, limit, windowStart);
  }

  async close(): Promise<void> {
    this.counts.clear();
  }
}

/**
 * Redis counters: INCR and PEXPIRE in one round trip. When Redis cannot be reached the limiter
 * fails open: the request is served and the failure is reported through `onError`, because
 * refusing every paying customer during a cache outage costs more than a minute of unmetered
 * traffic.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly kind = 'redis' as const;

  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'splitline:rl:',
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  async hit(key: string, limit: number, now = Date.now()): Promise<RateDecision> {
    const windowStart = now - (now % WINDOW_MS);
    const redisKey = `${this.prefix}${key}:${windowStart}`;
    try {
      const res = await this.redis.multi().incr(redisKey).pexpire(redisKey, WINDOW_MS + 1000).exec();
      const count = Number(res?.[0]?.[1] ?? 0);
      return decide(count, limit, windowStart);
    } catch (err) {
      this.onError(err);
      return { allowed: true, limit, remaining: limit, resetAt: windowStart + WINDOW_MS };
    }
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
