/**
 * A real dev chain for a test file (one anvil per file, in a temporary DATA_DIR), and the real
 * HTTP app built on it. The app uses the file's chain rather than starting its own, so several
 * apps in one file share one anvil.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { createTestClient, createWalletClient, http, type Hex } from 'viem';
import { startChain, type ChainDeps } from '../../src/chain/client.ts';
import { devAccount } from '../../src/chain/dev-accounts.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { after, before } from 'node:test';
import type { ChainWorker } from '../../src/payments/worker.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { admin, signIn, type Session } from '../helpers/session.ts';

export const PLATFORM = '0x000000000000000000000000000000000000beef';

/** How long a chain test waits for the worker or the node to get somewhere (a pass, a sweep, a restart). */
export const CHAIN_WAIT_MS = 20_000;

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
export function startChainApp(chain: ChainDeps, env: Record<string, string> = {}): Promise<TestApp> {
  return startTestApp({ CHAIN: 'dev', ...env }, { chain });
}

/** A client for anvil's own methods (mine, reorg, set balance) on the test chain's port. */
export function anvilClient(tc: TestChain) {
  return createTestClient({ chain: tc.chain.publicClient.chain, mode: 'anvil', transport: http(tc.chain.rpcUrl) });
}

/** A wallet client for dev account `i`, talking to anvil directly. */
export function devWallet(tc: TestChain, i: number) {
  return createWalletClient({ chain: tc.chain.publicClient.chain, transport: http(tc.chain.rpcUrl), account: devAccount(i) });
}

/** A merchant signed in, with their split deployed: them at 9950 bps, PLATFORM at 50. */
export interface Shop {
  s: Session;
  /** The merchant's wallet, lowercase (as the database keeps it). */
  wallet: string;
  key: string;
  split: Hex;
}

/** `origin`: the app's SITE_URL origin, when the test sets one (browser tests). */
export async function deployShop(t: TestApp, opts: { origin?: string } = {}): Promise<Shop> {
  const s = await signIn(t);
  const res = await admin(
    t,
    s,
    'POST',
    '/api/split/deploy',
    {
      recipients: [
        { address: s.wallet, sharesBps: 9950 },
        { address: PLATFORM, sharesBps: 50 },
      ],
    },
    opts.origin === undefined ? undefined : { origin: opts.origin },
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { s, wallet: s.wallet.toLowerCase(), key: await t.key(s.wallet), split: res.body.split.address };
}

/** Creates a one-item receipt through the API; returns its payment page's query string. */
export async function postReceipt(t: TestApp, sh: Shop, id: string, totalUsd: number, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.call(sh.key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Item', priceUsd: totalUsd }], totalUsd, ...extra });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return new URL(res.body.paymentUrl).search;
}

/** Creates a one-item receipt and returns the address its payment page says to pay. */
export async function receiptPayTo(t: TestApp, sh: Shop, id: string, totalUsd: number, extra: Record<string, unknown> = {}): Promise<Hex> {
  const search = await postReceipt(t, sh, id, totalUsd, extra);
  const page = await t.call(null, 'GET', `/api/pay/${id}${search}`);
  return page.body.payment.payTo;
}

/** A test file's anvil and app on it, its chain worker driven by the test (not started). */
export interface ChainFile {
  readonly tc: TestChain;
  readonly t: TestApp;
  readonly worker: ChainWorker;
}

/**
 * Starts a dev chain and an app on it before the file's tests (`env` for the app), and closes both
 * after. `workers`: start the app's background workers too, rather than the tests driving passes.
 * `started`: the file's own set-up, run inside the same `before` hook with the chain and the app
 * (node 20 runs a second top-level `before` as soon as it is registered).
 */
export function useChainApp(env: Record<string, string>, opts: { workers?: boolean; started?: (s: { tc: TestChain; t: TestApp }) => unknown } = {}): ChainFile {
  let tc: TestChain | undefined;
  let t: TestApp | undefined;
  before(async () => {
    tc = await startTestChain();
    t = await startChainApp(tc.chain, env);
    if (opts.workers === true) t.deps.startWorkers();
    await opts.started?.({ tc, t });
  });
  after(async () => {
    await t?.close();
    await tc?.close();
  });
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('the chain app is not started yet: use it inside a test');
    return v;
  };
  return {
    get tc() {
      return ready(tc);
    },
    get t() {
      return ready(t);
    },
    get worker() {
      return ready(t).deps.chainWorker!;
    },
  };
}
