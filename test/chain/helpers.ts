/**
 * A real dev chain for a test file (one anvil per file, in a temporary DATA_DIR), and the real
 * HTTP app built on it. The app uses the file's chain rather than starting its own, so several
 * apps in one file share one anvil.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { startChain, type ChainDeps } from '../../src/chain/client.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

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
