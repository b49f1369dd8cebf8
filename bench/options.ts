/**
 * The bench's settings, read from the environment in one place.
 *   BENCH_QUICK=1      2 s per route and a small data set, for a smoke test
 *   BENCH_DURATION=n   seconds of measured load per route (default 10)
 *   DATABASE_URL       run on that PostgreSQL server (in a database of the bench's own)
 *   REDIS_URL          passed through to the service for its rate limits
 *   BENCH_ROUTES       comma list of route ids to run (receiptRead, receiptList, receiptCreate,
 *                      orderCreate, orderCreateContended, userSearch); all by default. The
 *                      baseline runs every time; a run of some routes writes its results to
 *                      bench/results/<db>-<routes>.{json,md}, never over the full run's figures
 *   BENCH_CPU_PROFILE  a directory: the service writes a V8 CPU profile there when it stops
 *   BENCH_APK=0        skip the APK streaming bench (bench/apk.ts)
 *   BENCH_APK_MB=n     its package size in MB (default 200)
 *   BENCH_APK_STORES   comma list of stores for it: filesystem, azure (Azurite); both by default
 */
export interface ApkBenchOptions {
  enabled: boolean;
  sizeMb: number;
  /** Downloads of the package run at the same time. */
  downloads: number;
  stores: ('filesystem' | 'azure')[];
}

export interface BenchOptions {
  quick: boolean;
  connections: number;
  /** Seconds of measured load per route. */
  durationSec: number;
  /** Seconds of unmeasured load per route first, so JIT and connection pools are warm. */
  warmupSec: number;
  /** Receipts of the benchmarked merchant. */
  receipts: number;
  /** Receipts of each of the other merchants. */
  otherReceipts: number;
  otherMerchants: number;
  users: number;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  cpuProfileDir: string | undefined;
  /** Route ids to run; undefined runs them all. */
  routes: string[] | undefined;
  apk: ApkBenchOptions;
}

export function benchOptions(env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const quick = ['1', 'true', 'yes'].includes((env.BENCH_QUICK ?? '').toLowerCase());
  let durationSec = quick ? 2 : 10;
  const raw = env.BENCH_DURATION?.trim();
  if (raw !== undefined && raw !== '') {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 600) throw new Error(`BENCH_DURATION must be whole seconds from 1 to 600 (got "${raw}")`);
    durationSec = n;
  }
  return {
    quick,
    connections: 50,
    durationSec,
    warmupSec: quick ? 1 : 3,
    receipts: quick ? 10_000 : 100_000,
    otherReceipts: quick ? 1_000 : 5_000,
    otherMerchants: 4,
    users: quick ? 5_000 : 50_000,
    databaseUrl: env.DATABASE_URL?.trim() || undefined,
    redisUrl: env.REDIS_URL?.trim() || undefined,
    cpuProfileDir: env.BENCH_CPU_PROFILE?.trim() || undefined,
    routes: env.BENCH_ROUTES?.trim() ? env.BENCH_ROUTES.split(',').map((r) => r.trim()) : undefined,
    apk: apkOptions(env),
  };
}

function apkOptions(env: NodeJS.ProcessEnv): ApkBenchOptions {
  const rawMb = env.BENCH_APK_MB?.trim();
  const sizeMb = rawMb === undefined || rawMb === '' ? 200 : Number(rawMb);
  if (!Number.isInteger(sizeMb) || sizeMb < 1 || sizeMb > 2048) throw new Error(`BENCH_APK_MB must be whole MB from 1 to 2048 (got "${rawMb}")`);
  const stores = (env.BENCH_APK_STORES?.trim() || 'filesystem,azure').split(',').map((s) => s.trim());
  const unknown = stores.filter((s) => s !== 'filesystem' && s !== 'azure');
  if (unknown.length > 0) throw new Error(`BENCH_APK_STORES names unknown stores ${unknown.join(', ')}; known: filesystem, azure`);
  return { enabled: env.BENCH_APK?.trim() !== '0', sizeMb, downloads: 3, stores: stores as ApkBenchOptions['stores'] };
}
