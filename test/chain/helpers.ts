/**
 * A real dev chain for a test file (one anvil per file, in a temporary DATA_DIR), and the real
 * HTTP app built on it. The app uses the file's chain rather than starting its own, so several
 * apps in one file share one anvil.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { InjectOptions } from 'fastify';
import { pino, type Logger } from 'pino';
import { buildApp } from '../../src/app.ts';
import { startChain, type ChainDeps } from '../../src/chain/client.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createDeps } from '../../src/deps.ts';
import { createSubscription } from '../../src/gateway/subscriptions.ts';
import { freshPostgresDatabase, type TestApp } from '../helpers/app.ts';

export const PLATFORM = '0x000000000000000000000000000000000000beef';

export function testLogger(): Logger {
  return pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}

export function tempDataDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'splitline-chain-test-'));
}

export interface TestChain {
  chain: ChainDeps;
  config: Config;
  dataDir: string;
  /** Stops anvil; the data directory stays for a restart on the same state. */
  stop(): Promise<void>;
  /** Stops anvil and removes the data directory. */
  close(): Promise<void>;
}

export async function startTestChain(opts: { dataDir?: string; env?: Record<string, string> } = {}): Promise<TestChain> {
  const dataDir = opts.dataDir ?? tempDataDir();
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', CHAIN: 'dev', ...opts.env });
  const chain = await startChain({ config, logger: testLogger() });
  return {
    chain,
    config,
    dataDir,
    stop: () => chain.close(),
    async close() {
      await chain.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The real app (PGlite in memory, or a fresh PostgreSQL database) on the given chain. */
export async function startChainApp(chain: ChainDeps, env: Record<string, string> = {}): Promise<TestApp> {
  const dataDir = tempDataDir();
  const fresh = process.env.DATABASE_URL ? await freshPostgresDatabase(process.env.DATABASE_URL) : undefined;
  const config = loadConfig({
    DATA_DIR: dataDir,
    SITE_URL: 'http://pay.test',
    PLATFORM_RECIPIENT_ADDRESS: PLATFORM,
    LOG_LEVEL: 'silent',
    CHAIN: 'dev',
    ...(fresh ? { DATABASE_URL: fresh.url } : {}),
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    ...env,
  });
  const deps = await createDeps(config, {
    logger: testLogger(),
    pgliteDir: 'memory://',
    redisPrefix: `splitline-test-${randomBytes(6).toString('hex')}`,
    chain,
  });
  const app = await buildApp(deps);
  await app.ready();
  return {
    app,
    deps,
    config,
    async key(wallet, opts = {}) {
      const sub = await createSubscription(deps.database.db, { wallet, scopes: opts.scopes, rateLimitPerMinute: opts.rateLimitPerMinute ?? 100_000 });
      return sub.primaryKey;
    },
    async call(key, method, url, body, headers = {}) {
      const res = await app.inject({
        method,
        url,
        headers: { ...(key === null ? {} : { 'ocp-apim-subscription-key': key }), ...headers },
        ...(body === undefined ? {} : { payload: body as InjectOptions['payload'] }),
      });
      let parsed: unknown = res.body;
      if ((res.headers['content-type'] ?? '').toString().includes('json') && res.body !== '') parsed = res.json();
      return { status: res.statusCode, body: parsed, headers: res.headers };
    },
    async close() {
      await app.close();
      await deps.close();
      await fresh?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** True while a process with this id exists. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`, { cause: lastError });
}
