/**
 * Builds the real app on real dependencies for a test file: PGlite in memory by default, or a
 * fresh database on the PostgreSQL server named by DATABASE_URL (dropped afterwards); Redis when
 * REDIS_URL is set, under a key prefix of its own.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import pg from 'pg';
import { after, before } from 'node:test';
import type { SQL } from 'drizzle-orm';
import { pino } from 'pino';
import { buildApp } from '../../src/app.ts';
import { drizzle } from 'drizzle-orm/node-postgres';
import { openDatabase, type Database, type Db } from '../../src/db/client.ts';
import * as schema from '../../src/db/schema.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createDeps, type Deps } from '../../src/deps.ts';
import { createSubscription } from '../../src/gateway/subscriptions.ts';
import type { Scope } from '../../src/gateway/scopes.ts';
import type { ChainDeps } from '../../src/chain/client.ts';
import { contractFor, type Contract } from './contract.ts';
// Loaded before any app is built, so it records every app's routes (the security matrices).
import './routes.ts';

export interface TestApp {
  app: FastifyInstance;
  deps: Deps;
  config: Config;
  /** A subscription key for `wallet` with the given scopes (all by default). */
  key(wallet: string, opts?: { scopes?: Scope[]; rateLimitPerMinute?: number }): Promise<string>;
  /**
   * Sends a request with a subscription key, JSON body and extra headers. `T` types the body of
   * the answer the test expects (`t.call<ReceiptDetail>(key, 'GET', url)`); every answer of
   * `call` and of `app.inject` has been held to the app's published document (./contract.ts).
   */
  call<T = any>(key: string | null, method: InjectOptions['method'], url: string, body?: unknown, headers?: Record<string, string>): Promise<Res<T>>;
  close(): Promise<void>;
}

export interface Res<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | number | undefined>;
}

export function randomWallet(): string {
  return '0x' + randomBytes(20).toString('hex');
}

/** A new, empty database on the PostgreSQL server at `serverUrl`, named `<prefix>_<random>`: its URL and a drop function. */
export async function freshPostgresDatabase(serverUrl: string, prefix = 'splitline_t'): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/**
 * For a describe block on the PostgreSQL server at `serverUrl`: a fresh database opened with
 * `poolSize` connections before its tests, `setup` run on it, and both closed and dropped after.
 * Returns the open database (valid inside the tests).
 */
export function useFreshPostgres(serverUrl: string, opts: { poolSize: number; setup: SQL }): () => Database {
  let fresh: { url: string; drop(): Promise<void> } | undefined;
  let database: Database | undefined;
  before(async () => {
    fresh = await freshPostgresDatabase(serverUrl);
    database = await openDatabase({ databaseUrl: fresh.url, poolSize: opts.poolSize });
    await database.db.execute(opts.setup);
  });
  after(async () => {
    await database?.close();
    await fresh?.drop();
  });
  return () => {
    if (database === undefined) throw new Error('the database opens before the tests');
    return database;
  };
}

/**
 * A test file's app with `env`: started before the file's tests and closed after them. It is
 * handed to `started` inside the same `before` hook: node 20 runs a second top-level `before` as
 * soon as it is registered, so a file's own set-up belongs in `started`.
 */
export function useTestApp(env: Record<string, string>, started: (t: TestApp) => unknown): void {
  let app: TestApp | undefined;
  before(async () => {
    app = await startTestApp(env);
    await started(app);
  });
  after(async () => {
    await app?.close();
  });
}

/**
 * `opts.chain`: a chain the test file started (test/chain/helpers.ts); the app uses it rather than
 * starting its own, so several apps in one file share one anvil. Without it the app has no chain.
 */
export async function startTestApp(env: Record<string, string> = {}, opts: { chain?: ChainDeps; keyClock?: () => number } = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'splitline-test-'));
  const serverUrl = process.env.DATABASE_URL;
  const fresh = serverUrl ? await freshPostgresDatabase(serverUrl) : undefined;
  const config = loadConfig({
    DATA_DIR: dataDir,
    SITE_URL: 'http://pay.test',
    PLATFORM_RECIPIENT_ADDRESS: '0x000000000000000000000000000000000000beef',
    LOG_LEVEL: 'silent',
    // Many tests present bad keys on purpose from the one inject address; the tests of this
    // limit set their own.
    INVALID_KEY_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(fresh ? { DATABASE_URL: fresh.url } : {}),
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    ...env,
  });
  const deps = await createDeps(config, {
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    pgliteDir: 'memory://',
    redisPrefix: `splitline-test-${randomBytes(6).toString('hex')}`,
    ...(opts.chain ? { chain: opts.chain } : {}),
    ...(opts.keyClock ? { keyClock: opts.keyClock } : {}),
  });
  const app = await buildApp(deps);
  await app.ready();
  holdToContract(app);
  return {
    app,
    deps,
    config,
    async key(wallet, opts = {}) {
      const sub = await createSubscription(deps.database.db, {
        wallet,
        scopes: opts.scopes,
        rateLimitPerMinute: opts.rateLimitPerMinute ?? 100_000,
        // Test set-up, not a merchant: the per-merchant cap has tests of its own.
        maxActive: 1_000,
        // As a superadmin would: every scope asked for (all by default) is granted.
        grantedBySuperadmin: true,
      });
      return sub.primaryKey;
    },
    async call<T>(key: string | null, method: InjectOptions['method'], url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res<T>> {
      const res = await app.inject({
        method,
        url,
        headers: { ...(key === null ? {} : { 'ocp-apim-subscription-key': key }), ...headers },
        ...(body === undefined ? {} : { payload: body as InjectOptions['payload'] }),
      });
      let parsed: unknown = res.body;
      if ((res.headers['content-type'] ?? '').toString().includes('json') && res.body !== '') parsed = res.json();
      return { status: res.statusCode, body: parsed as T, headers: res.headers };
    },
    async close() {
      await app.close();
      await deps.close();
      await fresh?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

type InjectResult = Awaited<ReturnType<FastifyInstance['inject']>>;

function answerOf(res: InjectResult) {
  const header = (name: string) => {
    const v = res.headers[name.toLowerCase()];
    return v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : String(v);
  };
  const req = res.raw.req as { method?: string; url?: string };
  return { method: req.method ?? 'GET', url: req.url ?? '/', status: res.statusCode, header, text: res.payload };
}

/**
 * Holds every answer `app.inject` gives to the app's own published document (for a test that
 * builds its app itself; startTestApp's apps are held already). Call it after `app.ready()`.
 */
export function holdToContract(app: FastifyInstance): void {
  checkAnswers(app, contractFor(app.swagger()));
}

/**
 * Wraps `app.inject` so every answer is held to the document: a drift fails the test that made
 * the request, with an AssertionError naming the operation, the status and the first difference.
 */
function checkAnswers(app: FastifyInstance, contract: Contract): void {
  const inject = app.inject.bind(app) as (...args: unknown[]) => unknown;
  const checked = (...args: unknown[]): unknown => {
    const [opts, callback] = args;
    if (opts === undefined) return inject(); // the chained form: not used by the tests
    if (typeof callback === 'function') {
      return inject(opts, (err: Error | null, res: InjectResult) => {
        if (err !== null) return callback(err, res);
        try {
          contract.check(answerOf(res));
        } catch (failure) {
          return callback(failure, res);
        }
        return callback(null, res);
      });
    }
    return (inject(opts) as Promise<InjectResult>).then((res) => {
      contract.check(answerOf(res));
      return res;
    });
  };
  app.inject = checked as FastifyInstance['inject'];
}

/**
 * The app of `t` with its database unreachable: a real PostgreSQL client pointed at a closed
 * port, so every query fails to connect. `deps` replaces more of t's (e.g. a users directory on
 * the same unreachable database). Close it with `close()`.
 */
export async function appWithDatabaseAway(
  t: TestApp,
  deps: (unreachable: Db) => Partial<Deps> = () => ({}),
): Promise<{ app: FastifyInstance; close: () => Promise<void> }> {
  const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 1000 });
  const unreachable = drizzle(pool, { schema }) as unknown as Db;
  const app = await buildApp({ ...t.deps, database: { ...t.deps.database, db: unreachable }, ...deps(unreachable) });
  await app.ready();
  holdToContract(app);
  return {
    app,
    close: async () => {
      await app.close();
      await pool.end();
    },
  };
}
