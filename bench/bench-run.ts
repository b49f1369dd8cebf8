/**
 * What the payment and chain worker benches do around their measurements: clean up however they
 * end, describe the machine they ran on, and write their results under bench/results/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../scripts/service-launcher.ts';

/**
 * Runs `bench` with a list of cleanup steps it adds to; they run once, last first, when it
 * resolves or throws, or on SIGINT/SIGTERM (then the process exits 130).
 */
export async function withCleanup<T>(bench: (cleanup: (() => unknown)[]) => Promise<T>): Promise<T> {
  const cleanup: (() => unknown)[] = [];
  const runCleanup = async () => {
    for (const step of cleanup.reverse()) {
      try {
        await step();
      } catch (err) {
        console.error(`cleanup failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    cleanup.length = 0;
  };
  const onSignal = () => void runCleanup().then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await bench(cleanup);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await runCleanup();
  }
}

/** BENCH_QUICK: a short smoke run whose figures are written apart from the ones the README quotes. */
export function isQuick(env: NodeJS.ProcessEnv): boolean {
  return ['1', 'true', 'yes'].includes((env.BENCH_QUICK ?? '').toLowerCase());
}

export interface Machine {
  node: string;
  cpus: number;
  cpuModel: string;
  loadAverageAtStart: number;
  loadAverageAtEnd: number;
}

/** The machine a bench ran on, its load average now beside the one it had at the start. */
export function machine(loadAverageAtStart: number): Machine {
  return {
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    loadAverageAtStart,
    loadAverageAtEnd: os.loadavg()[0] ?? 0,
  };
}

/** Writes bench/results/<base>.json and .md; their paths. */
export function writeBenchResults(base: string, report: unknown, markdown: string): { json: string; md: string } {
  const dir = path.join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const json = path.join(dir, `${base}.json`);
  const md = path.join(dir, `${base}.md`);
  writeFileSync(json, JSON.stringify(report, null, 2) + '\n');
  writeFileSync(md, markdown);
  return { json, md };
}
