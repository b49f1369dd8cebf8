/**
 * The built-in gateway through the real HTTP app: correlation ids, header hygiene, the edge
 * secret, the public base path, rate limits, key revocation and rotation, hashed key storage,
 * Redis sharing and failure, and the error bodies of the framework's own refusals.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { connectRedis, createDeps, type Deps } from '../src/deps.ts';
import { RedisRateLimiter } from '../src/gateway/rate-limit.ts';
import { subscriptionKeys, subscriptions } from '../src/db/schema.ts';
import { createSubscription, revokeSubscription, rotateKey } from '../src/gateway/subscriptions.ts';
import { freshPostgresDatabase, randomWallet, type Res, startTestApp, type TestApp, useTestApp } from './helpers/app.ts';
import { until } from './helpers/wait.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const receipt = (id: string) => ({ id, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });

function assertErrorBody(res: Res, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(typeof res.body, 'object');
  assert.equal(res.body.error, code);
  assert.equal(typeof res.body.message, 'string');
  assert.ok(res.body.message.length > 0);
}

/** Rate windows are fixed minutes; a test that counts hits starts well inside one. */
async function freshWindow(minLeftMs = 8000): Promise<void> {
  await until(() => 60_000 - (Date.now() % 60_000) >= minLeftMs, minLeftMs + 1_000, `a rate window with ${minLeftMs} ms left`);
}

async function subscribe(db: Deps['database']['db'], wallet: string, rateLimitPerMinute = 100_000) {
  return createSubscription(db, { wallet, rateLimitPerMinute });
}

describe('correlation id', () => {
  test('every response carries one: 200, 401, 404, 429', async () => {
    const key = await t.key(randomWallet(), { rateLimitPerMinute: 1 });
    await freshWindow();
    const responses = [
      await t.call(null, 'GET', '/healthz'),
      await t.call(key, 'GET', '/api/receipts'),
      await t.call(key, 'GET', '/api/receipts'),
      await t.call(null, 'GET', '/api/receipts'),
      await t.call(null, 'GET', '/no/such/route'),
    ];
    assert.deepEqual(responses.map((r) => r.status), [200, 200, 429, 401, 404]);
    const ids = responses.map((r) => r.headers['x-correlation-id']);
    for (const id of ids) assert.match(String(id), /^[A-Za-z0-9._:-]{8,128}$/);
    assert.equal(new Set(ids).size, ids.length, 'each request gets its own id');
  });

  test('a well-formed incoming id is echoed; a malformed one is replaced', async () => {
    const mine = `trace-${randomBytes(6).toString('hex')}`;
    const echoed = await t.call(null, 'GET', '/healthz', undefined, { 'x-correlation-id': mine });
    assert.equal(echoed.headers['x-correlation-id'], mine);
    const refused = await t.call(null, 'GET', '/api/receipts', undefined, { 'x-correlation-id': mine });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['x-correlation-id'], mine);
    for (const bad of ['short', 'has spaces in it', 'x'.repeat(200), 'inject\u00e9d-value']) {
      const res = await t.call(null, 'GET', '/healthz', undefined, { 'x-correlation-id': bad });
      const id = String(res.headers['x-correlation-id']);
      assert.notEqual(id, bad);
      assert.match(id, /^[A-Za-z0-9._:-]{8,128}$/);
    }
  });
});

describe('identity headers sent by clients are ignored', () => {
  test("a key for merchant A with B's wallet and subscription headers still sees only A's receipts", async () => {
    const walletA = randomWallet();
    const walletB = randomWallet();
    const a = await t.key(walletA);
    const subB = await subscribe(t.deps.database.db, walletB);
    assert.equal((await t.call(a, 'POST', '/api/receipts', receipt('only-a'))).status, 201);
    assert.equal((await t.call(subB.primaryKey, 'POST', '/api/receipts', receipt('only-b'))).status, 201);
    const spoof = { 'x-wallet': walletB, wallet: walletB, 'x-subscription-id': subB.id };

    const list = await t.call(a, 'GET', '/api/receipts', undefined, spoof);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.receipts.map((r: { receiptId: string }) => r.receiptId), ['only-a']);
    assert.equal((await t.call(a, 'GET', '/api/receipts/only-b', undefined, spoof)).status, 404);
    assert.equal((await t.call(a, 'GET', '/api/receipts/status?receiptId=only-b', undefined, spoof)).status, 404);

    // A write with B's headers lands with A.
    assert.equal((await t.call(a, 'POST', '/api/receipts', receipt('written-by-a'), spoof)).status, 201);
    assert.equal((await t.call(a, 'GET', '/api/receipts/written-by-a')).status, 200);
    assert.equal((await t.call(subB.primaryKey, 'GET', '/api/receipts/written-by-a')).status, 404);
  });

  test('identity headers without a key are not a credential', async () => {
    const walletB = randomWallet();
    const subB = await subscribe(t.deps.database.db, walletB);
    const res = await t.call(null, 'GET', '/api/receipts', undefined, {
      'x-wallet': walletB,
      wallet: walletB,
      'x-subscription-id': subB.id,
    });
    assertErrorBody(res, 401, 'unauthorized');
  });
});

describe('EDGE_SECRET', () => {
  test('a missing or wrong x-edge-secret is 403; the right one passes; /healthz is exempt', async () => {
    const secret = `edge-${randomBytes(16).toString('hex')}`;
    const e = await startTestApp({ EDGE_SECRET: secret });
    try {
      const key = await e.key(randomWallet());
      assertErrorBody(await e.call(key, 'GET', '/api/receipts'), 403, 'forbidden');
      assertErrorBody(await e.call(key, 'GET', '/api/receipts', undefined, { 'x-edge-secret': 'wrong' }), 403, 'forbidden');
      assertErrorBody(await e.call(key, 'GET', '/api/receipts', undefined, { 'x-edge-secret': secret + 'x' }), 403, 'forbidden');
      assertErrorBody(await e.call(null, 'GET', '/no/such/route'), 403, 'forbidden');
      const ok = await e.call(key, 'GET', '/api/receipts', undefined, { 'x-edge-secret': secret });
      assert.equal(ok.status, 200);
      // The edge secret is not a subscription key.
      assertErrorBody(await e.call(null, 'GET', '/api/receipts', undefined, { 'x-edge-secret': secret }), 401, 'unauthorized');
      const health = await e.call(null, 'GET', '/healthz');
      assert.equal(health.status, 200);
      assert.equal(health.body.status, 'ok');
      const refused = await e.call(key, 'GET', '/api/receipts');
      assert.ok(refused.headers['x-correlation-id']);
    } finally {
      await e.close();
    }
  });
});

describe('PUBLIC_BASE_PATH', () => {
  test('routes answer under the prefix and unprefixed', async () => {
    const p = await startTestApp({ PUBLIC_BASE_PATH: '/portalpay' });
    try {
      const key = await p.key(randomWallet());
      for (const prefix of ['/portalpay', '']) {
        assert.equal((await p.call(null, 'GET', `${prefix}/healthz`)).status, 200, `${prefix}/healthz`);
        assert.equal((await p.call(key, 'POST', `${prefix}/api/receipts`, receipt(`r${prefix.length}`))).status, 201);
        const list = await p.call(key, 'GET', `${prefix}/api/receipts?limit=1`);
        assert.equal(list.status, 200);
        assert.equal(list.body.receipts.length, 1, 'the query string survives the prefix');
        const status = await p.call(key, 'GET', `${prefix}/api/receipts/status?receiptId=r${prefix.length}`);
        assert.equal(status.status, 200);
        assert.equal(status.body.id, `r${prefix.length}`);
        assertErrorBody(await p.call(null, 'GET', `${prefix}/api/receipts`), 401, 'unauthorized');
        assert.equal((await p.call(null, 'GET', `${prefix}/openapi.json`)).status, 200);
      }
      // Only a whole path segment is a prefix.
      assertErrorBody(await p.call(null, 'GET', '/portalpayx/healthz'), 404, 'not_found');

      // Behind a gateway that forwards only /portalpay/*, the reference's assets must live there too.
      const page = await p.call(null, 'GET', '/portalpay/docs');
      assert.equal(page.status, 200);
      const assets = [...String(page.body).matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
      assert.ok(assets.length >= 3);
      for (const asset of assets) {
        const url = new URL(asset, 'http://gateway.test/portalpay/docs/').pathname;
        assert.ok(url.startsWith('/portalpay/'), `${asset} is under the prefix`);
        assert.equal((await p.call(null, 'GET', url)).status, 200, `${asset} loads`);
      }
    } finally {
      await p.close();
    }
  });
});

describe('rate limits', () => {
  test('headers on every keyed response; past the budget 429 with resetAt in the future', async () => {
    const key = await t.key(randomWallet(), { rateLimitPerMinute: 3 });
    await freshWindow();
    const seen: Res[] = [];
    for (let i = 0; i < 3; i++) seen.push(await t.call(key, 'GET', '/api/receipts'));
    for (const [i, res] of seen.entries()) {
      assert.equal(res.status, 200);
      assert.equal(res.headers['x-ratelimit-limit'], '3');
      assert.equal(res.headers['x-ratelimit-remaining'], String(2 - i));
      assert.match(String(res.headers['x-ratelimit-reset']), /^\d+$/);
    }
    const before = Date.now();
    const limited = await t.call(key, 'GET', '/api/receipts');
    assertErrorBody(limited, 429, 'rate_limited');
    assert.ok(Number.isInteger(limited.body.resetAt), 'resetAt is an integer');
    assert.ok(limited.body.resetAt > before, 'resetAt lies in the future');
    assert.ok(limited.body.resetAt <= before + 60_000, 'resetAt is Unix ms within the window');
    assert.equal(limited.headers['x-ratelimit-remaining'], '0');
    assert.ok(Math.abs(Number(limited.headers['x-ratelimit-reset']) * 1000 - limited.body.resetAt) < 1000, 'header and body agree');
    // Refused before any handler work: a write is refused too.
    assertErrorBody(await t.call(key, 'POST', '/api/receipts', receipt('late')), 429, 'rate_limited');
  });

  test('a burst of concurrent requests gets the budget exactly: each its own count, the rest 429', async () => {
    // On Redis, the hits of one turn on one counter go as a single increment by their number;
    // every request must still see its own place in the sequence.
    const key = await t.key(randomWallet(), { rateLimitPerMinute: 5 });
    await freshWindow();
    const burst = await Promise.all(Array.from({ length: 12 }, () => t.call(key, 'GET', '/api/receipts')));
    const allowed = burst.filter((r) => r.status === 200);
    assert.equal(allowed.length, 5, burst.map((r) => r.status).join());
    for (const r of burst.filter((r) => r.status !== 200)) assertErrorBody(r, 429, 'rate_limited');
    assert.deepEqual(allowed.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort(), [0, 1, 2, 3, 4]);
    assertErrorBody(await t.call(key, 'GET', '/api/receipts'), 429, 'rate_limited');
  });

  test('the budget is per subscription, not per merchant', async () => {
    const wallet = randomWallet();
    const first = await t.key(wallet, { rateLimitPerMinute: 2 });
    const second = await t.key(wallet, { rateLimitPerMinute: 2 });
    await freshWindow();
    assert.equal((await t.call(first, 'GET', '/api/receipts')).status, 200);
    assert.equal((await t.call(first, 'GET', '/api/receipts')).status, 200);
    assertErrorBody(await t.call(first, 'GET', '/api/receipts'), 429, 'rate_limited');
    const other = await t.call(second, 'GET', '/api/receipts');
    assert.equal(other.status, 200);
    assert.equal(other.headers['x-ratelimit-remaining'], '1');
  });

  test('the public tracking-status route is limited per client address', async () => {
    const l = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '2' });
    try {
      await freshWindow();
      const body = { receiptId: 'nope', wallet: randomWallet(), status: 'link_opened' };
      // A receipt nobody has is answered as an existing one would be: the route is no existence oracle.
      assert.equal((await l.call(null, 'POST', '/api/receipts/status', body)).status, 200);
      const second = await l.call(null, 'POST', '/api/receipts/status', body);
      assert.equal(second.headers['x-ratelimit-remaining'], '0');
      const third = await l.call(null, 'POST', '/api/receipts/status', body);
      assertErrorBody(third, 429, 'rate_limited');
      assert.ok(third.body.resetAt > Date.now());
    } finally {
      await l.close();
    }
  });
});

describe('revocation and rotation', () => {
  let c: TestApp;
  /** How far the key cache's clock is ahead of the real one. */
  let ahead = 0;
  before(async () => {
    c = await startTestApp({ KEY_CACHE_TTL_MS: '200' }, { keyClock: () => Date.now() + ahead });
  });
  after(async () => {
    await c.close();
  });

  test('a revoked key is refused once the cache TTL has passed', async () => {
    const sub = await subscribe(c.deps.database.db, randomWallet());
    assert.equal((await c.call(sub.primaryKey, 'GET', '/api/receipts')).status, 200);
    assert.equal((await c.call(sub.secondaryKey, 'GET', '/api/receipts')).status, 200);
    await revokeSubscription(c.deps.database.db, sub.id);
    ahead += 300; // past the cache's 200 ms TTL
    assertErrorBody(await c.call(sub.primaryKey, 'GET', '/api/receipts'), 401, 'unauthorized');
    assertErrorBody(await c.call(sub.secondaryKey, 'GET', '/api/receipts'), 401, 'unauthorized');
  });

  test('rotating a key kills the old one and keeps the other slot working', async () => {
    const sub = await subscribe(c.deps.database.db, randomWallet());
    assert.equal((await c.call(sub.primaryKey, 'GET', '/api/receipts')).status, 200);
    const rotated = await rotateKey(c.deps.database.db, sub.id, 'primary');
    ahead += 300; // past the cache's 200 ms TTL
    assertErrorBody(await c.call(sub.primaryKey, 'GET', '/api/receipts'), 401, 'unauthorized');
    assert.equal((await c.call(sub.secondaryKey, 'GET', '/api/receipts')).status, 200);
    assert.equal((await c.call(rotated.key, 'GET', '/api/receipts')).status, 200);
    const again = await rotateKey(c.deps.database.db, sub.id, 'secondary');
    ahead += 300;
    assertErrorBody(await c.call(sub.secondaryKey, 'GET', '/api/receipts'), 401, 'unauthorized');
    assert.equal((await c.call(again.key, 'GET', '/api/receipts')).status, 200);
    assert.equal((await c.call(rotated.key, 'GET', '/api/receipts')).status, 200);
  });
});

describe('key storage', () => {
  test('keys are stored only as hashes', async () => {
    const sub = await subscribe(t.deps.database.db, randomWallet());
    assert.equal((await t.call(sub.primaryKey, 'GET', '/api/receipts')).status, 200);
    const db = t.deps.database.db;
    const keyRows = await db.select().from(subscriptionKeys);
    const subRows = await db.select().from(subscriptions);
    const result: unknown = await db.execute(sql`select * from subscription_keys`);
    const raw = result as { rows: unknown[] };
    const stored = JSON.stringify([keyRows, subRows, raw.rows]);
    for (const key of [sub.primaryKey, sub.secondaryKey]) {
      assert.ok(!stored.includes(key), 'no row holds the key');
      assert.ok(!stored.includes(key.slice(10)), 'no row holds the secret part of the key');
      const hash = createHash('sha256').update(key).digest('hex');
      assert.ok(keyRows.some((r) => r.keyHash === hash && r.subscriptionId === sub.id), 'the hash is stored');
    }
  });
});

/** An app of our own: for two instances sharing state, or a route added before ready(). */
interface Instance {
  app: FastifyInstance;
  deps: Deps;
  close(): Promise<void>;
}

async function buildInstance(
  env: Record<string, string>,
  opts: { redisPrefix?: string; setup?: (app: FastifyInstance, deps: Deps) => void } = {},
): Promise<Instance> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-gw-'));
  const config = loadConfig({ DATA_DIR: dataDir, SITE_URL: 'http://pay.test', LOG_LEVEL: 'silent', ...env });
  const deps = await createDeps(config, {
    logger: pino({ level: 'silent' }),
    pgliteDir: 'memory://',
    redisPrefix: opts.redisPrefix ?? `splitline-test-${randomBytes(6).toString('hex')}`,
  });
  const app = await buildApp(deps);
  opts.setup?.(app, deps);
  await app.ready();
  return {
    app,
    deps,
    async close() {
      await app.close();
      await deps.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

describe('Redis', () => {
  test(
    'two instances sharing one Redis share one budget',
    { skip: process.env.REDIS_URL ? false : 'REDIS_URL is not set; the in-memory limiter is per instance' },
    async () => {
      const redisUrl = process.env.REDIS_URL as string;
      const fresh = process.env.DATABASE_URL ? await freshPostgresDatabase(process.env.DATABASE_URL) : undefined;
      const env = { REDIS_URL: redisUrl, ...(fresh ? { DATABASE_URL: fresh.url } : {}) };
      const prefix = `splitline-test-${randomBytes(6).toString('hex')}`;
      const one = await buildInstance(env, { redisPrefix: prefix });
      const two = await buildInstance(env, { redisPrefix: prefix });
      try {
        const sub = await createSubscription(one.deps.database.db, { wallet: randomWallet(), rateLimitPerMinute: 4 });
        if (!fresh) {
          // Two in-memory PGlite databases: give the second instance the same subscription rows.
          const db2 = two.deps.database.db;
          await db2.insert(subscriptions).values(await one.deps.database.db.select().from(subscriptions));
          await db2.insert(subscriptionKeys).values(await one.deps.database.db.select().from(subscriptionKeys));
        }
        const get = (i: Instance) =>
          i.app.inject({ method: 'GET', url: '/api/receipts', headers: { 'ocp-apim-subscription-key': sub.primaryKey } });
        await freshWindow();
        const statuses: number[] = [];
        const remaining: string[] = [];
        for (const i of [one, two, one, two, one, two]) {
          const res = await get(i);
          statuses.push(res.statusCode);
          remaining.push(String(res.headers['x-ratelimit-remaining']));
        }
        assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
        assert.deepEqual(remaining, ['3', '2', '1', '0', '0', '0']);
      } finally {
        await one.close();
        await two.close();
        await fresh?.drop();
      }
    },
  );

  test(
    'the hits of one turn on one counter are one increment, and each hit keeps its own count',
    { skip: process.env.REDIS_URL ? false : 'REDIS_URL is not set' },
    async () => {
      const redis = connectRedis(process.env.REDIS_URL as string);
      await new Promise<void>((resolve, reject) => redis.once('ready', resolve).once('error', reject));
      const prefix = `splitline-test-${randomBytes(6).toString('hex')}:`;
      const scripts: string[] = [];
      const send = redis.sendCommand.bind(redis);
      redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
        if (/^eval/i.test(command.name)) scripts.push(command.name);
        return (send as (...a: unknown[]) => unknown)(command, ...rest);
      });
      const limiter = new RedisRateLimiter(redis, prefix);
      try {
        const now = Date.now();
        const decisions = await Promise.all(Array.from({ length: 8 }, () => limiter.hit('sub:a', 5, now)));
        assert.equal(scripts.length, 1, 'one increment for the eight hits');
        assert.deepEqual(
          decisions.map((d) => [d.allowed, d.remaining]),
          [[true, 4], [true, 3], [true, 2], [true, 1], [true, 0], [false, 0], [false, 0], [false, 0]],
        );
        // Another counter in the same turn is its own increment, in the same write; the next turn
        // goes on counting.
        const [other, next] = await Promise.all([limiter.hit('sub:b', 5, now), limiter.hit('sub:a', 10, now)]);
        assert.equal(other.remaining, 4);
        assert.equal(next.remaining, 1, 'ninth hit on a budget of ten');
        assert.equal(scripts.length, 3);
      } finally {
        const keys = await redis.keys(`${prefix}*`);
        if (keys.length > 0) await redis.del(...keys);
        await limiter.close();
      }
    },
  );

  test(
    'a start waits for Redis, so the first requests are counted too',
    { skip: process.env.REDIS_URL ? false : 'REDIS_URL is not set' },
    async () => {
      // A Redis that takes 400 ms to let a connection through: requests served before then would
      // find no connection and be served uncounted (the limiter fails open).
      const real = new URL(process.env.REDIS_URL as string);
      const sockets = new Set<Socket>();
      const slow = createServer((client) => {
        sockets.add(client);
        client.pause();
        setTimeout(() => {
          const upstream = connect(Number(real.port || 6379), real.hostname, () => {
            sockets.add(upstream);
            client.pipe(upstream).pipe(client);
            client.resume();
          });
          const close = () => {
            client.destroy();
            upstream.destroy();
          };
          upstream.on('error', close).on('close', close);
          client.on('error', close).on('close', close);
        }, 400);
      });
      await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
      const port = (slow.address() as AddressInfo).port;
      try {
        const r = await startTestApp({ REDIS_URL: `redis://127.0.0.1:${port}`, PUBLIC_RATE_LIMIT_PER_MINUTE: '1' });
        try {
          const limiter = r.deps.limiter as RedisRateLimiter;
          const body = { receiptId: 'nope', wallet: randomWallet(), status: 'link_opened' };
          assert.equal((await r.call(null, 'POST', '/api/receipts/status', body)).status, 200);
          assertErrorBody(await r.call(null, 'POST', '/api/receipts/status', body), 429, 'rate_limited');
          assert.equal(limiter.servedUnmetered, 0);
        } finally {
          await r.close();
        }
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => slow.close(resolve));
      }
    },
  );

  test('an unreachable Redis fails open: requests are served promptly', async () => {
    const r = await startTestApp({ REDIS_URL: 'redis://127.0.0.1:1' });
    try {
      const key = await r.key(randomWallet(), { rateLimitPerMinute: 1 });
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const res = await r.call(key, 'GET', '/api/receipts');
        assert.equal(res.status, 200, 'served although the limiter cannot count');
        // A real-time bound on purpose: what is under test is that no request waits on Redis's
        // reconnection (seconds, in ioredis); an in-process request answers far inside 2 s.
        assert.ok(Date.now() - started < 2000, `answered in ${Date.now() - started} ms`);
      }
      assert.equal((await r.call(null, 'GET', '/healthz')).status, 200);
    } finally {
      await r.close();
    }
  });
});

describe('framework refusals use the error body', () => {
  test('an unknown route is 404 not_found, with or without a key', async () => {
    const key = await t.key(randomWallet());
    assertErrorBody(await t.call(null, 'GET', '/api/nothing-here'), 404, 'not_found');
    assertErrorBody(await t.call(key, 'GET', '/api/nothing-here'), 404, 'not_found');
    assertErrorBody(await t.call(key, 'DELETE', '/api/receipts'), 404, 'not_found');
  });

  test('malformed JSON is 400 invalid_input', async () => {
    const key = await t.key(randomWallet());
    const res = await t.call(key, 'POST', '/api/receipts', '{"id": "x", "lineItems": [', { 'content-type': 'application/json' });
    assertErrorBody(res, 400, 'invalid_input');
    assert.ok(res.headers['x-correlation-id']);
  });

  test('a body over the limit is 413 with the error body', async () => {
    const key = await t.key(randomWallet());
    const huge = JSON.stringify({ id: 'big', lineItems: [{ label: 'x'.repeat(400 * 1024), priceUsd: 1 }], totalUsd: 1 });
    const res = await t.call(key, 'POST', '/api/receipts', huge, { 'content-type': 'application/json' });
    assert.equal(res.status, 413);
    assert.equal(typeof res.body.error, 'string');
    assert.equal(typeof res.body.message, 'string');
    assert.ok(res.headers['x-correlation-id']);
  });

  test('a 500 never leaks internals', async () => {
    const secret = 'postgres://admin:hunter2@db.internal/prod';
    const i = await buildInstance(
      {},
      {
        setup(app, deps) {
          app.get('/test/throws', async () => {
            throw new Error(`connect failed for ${secret}`);
          });
          app.get('/test/throws-5xx', async () => {
            throw Object.assign(new Error(`upstream ${secret}`), { statusCode: 502 });
          });
          app.get('/test/bad-sql', async () => {
            await deps.database.db.execute(sql.raw('select * from table_that_leaks_its_name'));
            return {};
          });
        },
      },
    );
    try {
      for (const url of ['/test/throws', '/test/throws-5xx', '/test/bad-sql']) {
        const res = await i.app.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 500, url);
        const body = res.json();
        assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], url);
        assert.equal(body.error, 'failed');
        for (const leak of ['hunter2', 'db.internal', 'table_that_leaks_its_name', 'upstream', '.ts:', '    at ']) {
          assert.ok(!res.body.includes(leak), `${url} leaks "${leak}": ${res.body}`);
        }
        const id = String(res.headers['x-correlation-id']);
        assert.ok(body.message.includes(id), 'the message names the correlation id for support');
      }
    } finally {
      await i.close();
    }
  });
});
