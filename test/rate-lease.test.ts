/**
 * The Redis limiter's reservations ahead (src/gateway/rate-limit.ts): a busy counter takes places
 * in its sequence before it needs them, so its next requests are decided without a round trip,
 * and no instance ever serves past the shared budget. Two limiters on one Redis stand for two
 * instances.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { connectRedis } from '../src/deps.ts';
import { leaseFor, RedisRateLimiter, type RateDecision } from '../src/gateway/rate-limit.ts';
import { until } from './helpers/wait.ts';

test('leaseFor: nothing for a quiet counter or a small limit, else eight places a hit, at most 2% of the limit', () => {
  assert.equal(leaseFor(3, 1_000_000), 0, 'three hits in a turn is not busy');
  assert.equal(leaseFor(4, 1_000_000), 32);
  assert.equal(leaseFor(20, 1_000_000), 160);
  assert.equal(leaseFor(20, 1_000), 20, '2% of 1,000');
  assert.equal(leaseFor(20, 49), 0, 'a limit under 50 never reserves ahead');
  assert.equal(leaseFor(20, 50), 1);
});

const skip = process.env.REDIS_URL ? false : 'REDIS_URL is not set';

/** A Redis connection whose script calls (the increments) are counted. */
async function countingRedis(): Promise<{ redis: Redis; increments: () => number }> {
  const redis = connectRedis(process.env.REDIS_URL as string);
  await new Promise<void>((resolve, reject) => redis.once('ready', resolve).once('error', reject));
  let calls = 0;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    if (/^eval/i.test(command.name)) calls++;
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  });
  return { redis, increments: () => calls };
}

/** A limiter on a counting Redis, under a key prefix of its own that is cleared afterwards. */
async function withLimiter(
  run: (t: { redis: Redis; increments: () => number; prefix: string; limiter: RedisRateLimiter }) => Promise<void>,
): Promise<void> {
  const { redis, increments } = await countingRedis();
  const prefix = `splitline-test-${randomBytes(6).toString('hex')}:`;
  const limiter = new RedisRateLimiter(redis, prefix);
  try {
    await run({ redis, increments, prefix, limiter });
  } finally {
    await cleanUp(redis, prefix);
    await limiter.close();
  }
}

/** `n` hits on one counter in one turn. */
const turn = (limiter: RedisRateLimiter, n: number, limit: number, now: number): Promise<RateDecision[]> =>
  Promise.all(Array.from({ length: n }, () => limiter.hit('sub:busy', limit, now)));

/** The place in the counter's sequence a decision stands for. */
const placeOf = (d: RateDecision) => d.limit - d.remaining;

/** Away from the end of a one-minute window, so a test's hits all count in one. */
function midWindow(): number {
  const now = Date.now();
  return now - (now % 60_000) + 30_000;
}

describe('reservations ahead on Redis', { skip }, () => {
  test('a busy counter reserves places with its increment and decides the next hits without a round trip', () =>
    withLimiter(async ({ redis, increments, prefix, limiter }) => {
      const now = midWindow();
      const first = await turn(limiter, 20, 1_000_000, now);
      assert.equal(increments(), 1);
      const counter = `${prefix}sub:busy:${now - (now % 60_000)}`;
      assert.equal(Number(await redis.get(counter)), 20 + 160, 'the 20 hits and 160 places ahead, counted in Redis');
      assert.deepEqual(first.map(placeOf), Array.from({ length: 20 }, (_, i) => i + 1));

      // The next 80 hits take reserved places; the one that leaves half the reservation asks for
      // more, in the background, before the places run out.
      const next = await turn(limiter, 80, 1_000_000, now);
      assert.deepEqual(next.map(placeOf), Array.from({ length: 80 }, (_, i) => 21 + i), 'each its own place, in order');
      assert.ok(next.every((d) => d.allowed));
      assert.equal(increments(), 1, 'no round trip for them');
      await until(async () => Number(await redis.get(counter)) === 180 + 160, 5_000, 'the refill, as large as the reservation it refills');
      assert.equal(increments(), 2);
      const more = await turn(limiter, 100, 1_000_000, now);
      assert.deepEqual(more.map(placeOf).slice(0, 80), Array.from({ length: 80 }, (_, i) => 101 + i), 'the rest of the first reservation');
      assert.deepEqual(more.map(placeOf).slice(80), Array.from({ length: 20 }, (_, i) => 181 + i), 'then the refill, with no gap');
      assert.equal(increments(), 2);

      // A new window starts from nothing: its first hits go to Redis again.
      await turn(limiter, 1, 1_000_000, now + 60_000);
      assert.equal(increments(), 3);
    }));

  test('small limits and quiet counters count exactly what was served', () =>
    withLimiter(async ({ redis, increments, prefix, limiter }) => {
      const now = midWindow();
      const decisions = await turn(limiter, 10, 49, now);
      await turn(limiter, 3, 1_000_000, now + 1).then(() => undefined);
      const window = now - (now % 60_000);
      assert.equal(Number(await redis.get(`${prefix}sub:busy:${window}`)), 10 + 3, 'no place reserved ahead');
      assert.equal(increments(), 2);
      assert.deepEqual(decisions.map(placeOf), Array.from({ length: 10 }, (_, i) => i + 1));
    }));

  test('two instances reserving ahead never serve past the shared budget, and spend nearly all of it', async () => {
    const one = await countingRedis();
    const two = await countingRedis();
    const prefix = `splitline-test-${randomBytes(6).toString('hex')}:`;
    const a = new RedisRateLimiter(one.redis, prefix);
    const b = new RedisRateLimiter(two.redis, prefix);
    const limit = 1_000;
    try {
      const now = midWindow();
      const served: number[] = [];
      let refused = 0;
      // Bursts of 25 on each in turn, until both refuse a whole burst.
      for (let round = 0; round < 200; round++) {
        const [fromA, fromB] = await Promise.all([turn(a, 25, limit, now), turn(b, 25, limit, now)]);
        const all = [...fromA, ...fromB];
        for (const d of all) if (d.allowed) served.push(placeOf(d));
        refused += all.filter((d) => !d.allowed).length;
        if (all.every((d) => !d.allowed)) break;
      }
      assert.ok(refused > 0, 'the budget ran out');
      assert.equal(new Set(served).size, served.length, 'no place served twice');
      assert.ok(served.every((p) => p >= 1 && p <= limit), 'every place served is within the limit');
      assert.ok(served.length <= limit, `served ${served.length} of ${limit}`);
      // What each instance held unused when the budget ran out: at most 3% of the limit each.
      assert.ok(served.length >= limit - 2 * 0.03 * limit, `served ${served.length}: at most 3% per instance left unused`);
      assert.ok(one.increments() + two.increments() < served.length / 5, `${one.increments() + two.increments()} increments for ${served.length} hits`);
    } finally {
      await cleanUp(one.redis, prefix);
      await a.close();
      await b.close();
    }
  });
});

async function cleanUp(redis: Redis, prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
}
