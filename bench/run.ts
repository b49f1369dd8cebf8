/**
 * npm run bench: throughput and latency of the main routes, next to a bare node:http baseline
 * measured in the same run with the same load. See bench/options.ts for the settings.
 *
 * Seeds a fresh database (PGlite in a temporary directory, or a database of its own on the
 * PostgreSQL server in DATABASE_URL), starts the real service as a child process, drives each
 * route with autocannon, and writes bench/results/<db>-latest.{json,md}. Exits non-zero when the
 * bench itself fails (a server that does not start, a route answering errors), not on a missed
 * target.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { openDatabase, type Database } from '../src/db/client.ts';
import { compiledProgram, launchService, type LaunchedService } from '../scripts/service-launcher.ts';
import { freshPostgresDatabase } from '../test/helpers/app.ts';
import { measure, preflight, warmUp, type LoadSettings, type Measured, type Scenario } from './load.ts';
import { benchOptions, type BenchOptions } from './options.ts';
import { benchApk } from './apk.ts';
import { benchChainWorker } from './chain-worker.ts';
import { benchMainnet } from './mainnet.ts';
import { benchPayments } from './payments.ts';
import { compareWithBaseline, evaluateTargets, markdown, writeResults, type Report, type RouteRun } from './report.ts';
import { BASELINE, planRoutes, ROUTES } from './scenarios.ts';
import { PLATFORM_RECIPIENT, seed, type Seeded } from './seed.ts';
import { RssSampler } from './rss.ts';
import { machine } from './bench-run.ts';

/** Cleanup steps, run once in reverse order: on success, on failure and on Ctrl-C. */
class Cleanup {
  private readonly steps: { name: string; run: () => unknown }[] = [];
  private done: Promise<void> | undefined;

  add(name: string, run: () => unknown): void {
    this.steps.push({ name, run });
  }

  run(): Promise<void> {
    this.done ??= (async () => {
      for (const step of this.steps.reverse()) {
        try {
          await step.run();
        } catch (err) {
          console.error(`cleanup: ${step.name} failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    })();
    return this.done;
  }
}

async function describeDatabase(database: Database): Promise<string> {
  const result: unknown = await database.db.execute(sql`show server_version`);
  const version = (result as { rows?: { server_version: string }[] }).rows?.[0]?.server_version ?? 'unknown version';
  return database.kind === 'postgres' ? `PostgreSQL ${version}` : `PGlite (PostgreSQL ${version})`;
}

/** Seeds through a direct connection and closes it: PGlite allows one process per data directory. */
async function prepareData(opts: BenchOptions, dataDir: string, databaseUrl: string | undefined) {
  const database = await openDatabase({ databaseUrl, dataDir, poolSize: 4 });
  try {
    const description = await describeDatabase(database);
    const seeded = await seed(database, opts, Object.keys(ROUTES));
    return { seeded, description };
  } finally {
    await database.close();
  }
}

/** On top of the launcher's minimal base: only what the bench chooses. */
function serviceEnv(o: { dataDir: string; databaseUrl: string | undefined; redisUrl: string | undefined }): Record<string, string> {
  return {
    DATA_DIR: o.dataDir,
    LOG_LEVEL: 'warn',
    PLATFORM_RECIPIENT_ADDRESS: PLATFORM_RECIPIENT,
    ...(o.databaseUrl === undefined ? {} : { DATABASE_URL: o.databaseUrl }),
    ...(o.redisUrl === undefined ? {} : { REDIS_URL: o.redisUrl }),
  };
}

const fmt = (m: Measured) =>
  `${Math.round(m.reqPerSec).toLocaleString('en-US')} req/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms` +
  (m.unexpected > 0 ? `, statuses ${JSON.stringify(m.statusCounts)}` : '') +
  (m.timeouts > 0 ? `, ${m.timeouts} timeouts` : '') +
  (m.errors > 0 ? `, ${m.errors} connection errors` : '');

/**
 * What makes a run a failure of the bench: statuses other than the expected one, dropped
 * connections, a server that stopped answering. Slowness (timeouts, or no answer at all within
 * a short run while the server still answers afterwards) is a finding shown in the table.
 */
async function problemsOf(url: string, s: Scenario, m: Measured): Promise<string[]> {
  const problems: string[] = [];
  if (m.unexpected + m.errors > 0) {
    problems.push(`${s.label}: ${m.unexpected} responses other than ${s.expectStatus} ${JSON.stringify(m.statusCounts)}, ${m.errors} connection errors`);
  }
  if (m.requests === 0) {
    const again = await preflight(url, s, 1);
    if (!again.ok) problems.push(`${s.label}: no response within the run, and afterwards: ${again.message}`);
  }
  return problems;
}

async function benchRoutes(service: LaunchedService, seeded: Seeded, rss: RssSampler, load: LoadSettings, only: string[] | undefined) {
  const runs: RouteRun[] = [];
  const failures: string[] = [];
  for (const plan of planRoutes(seeded)) {
    const route = ROUTES[plan.id];
    if (only !== undefined && !only.includes(plan.id)) {
      runs.push({ id: plan.id, route, status: 'skipped', reason: 'not in BENCH_ROUTES' });
      continue;
    }
    if ('skipped' in plan) {
      console.log(`  ${route.padEnd(30)} skipped: ${plan.skipped}`);
      runs.push({ id: plan.id, route, status: 'skipped', reason: plan.skipped });
      continue;
    }
    const check = await preflight(service.base, plan.scenario);
    if (!check.ok) {
      console.log(`  ${route.padEnd(30)} ${check.notRegistered ? 'skipped' : 'FAILED'}: ${check.message}`);
      runs.push({ id: plan.id, route, status: check.notRegistered ? 'skipped' : 'failed', reason: check.message });
      if (!check.notRegistered) failures.push(`${route}: ${check.message}`);
      continue;
    }
    rss.nextPhase();
    const m = await measure(service.base, plan.scenario, load);
    console.log(`  ${route.padEnd(30)} ${fmt(m)}`);
    runs.push({ id: plan.id, route, status: 'measured', peakRssMb: rss.nextPhase(), ...m });
    failures.push(...(await problemsOf(service.base, plan.scenario, m)));
  }
  return { runs, failures };
}

/** Seconds of unmeasured load per route on a freshly started service, before anything is measured. */
const SERVICE_WARMUP_SEC = 4;

async function warmService(service: LaunchedService, seeded: Seeded, load: LoadSettings, only: string[] | undefined): Promise<string[]> {
  const warmed: string[] = [];
  for (const plan of planRoutes(seeded)) {
    if ('skipped' in plan || (only !== undefined && !only.includes(plan.id))) continue;
    if (plan.scenario.next().method !== 'GET') continue;
    if (!(await preflight(service.base, plan.scenario)).ok) continue;
    await warmUp(service.base, plan.scenario, load, load.warmupSec > 1 ? SERVICE_WARMUP_SEC : 1);
    warmed.push(plan.id);
  }
  return warmed;
}

/** The baseline before and after the routes, the routes in between, the service's memory throughout. */
async function runLoad(baselineServer: LaunchedService, service: LaunchedService, seeded: Seeded, opts: BenchOptions) {
  const load: LoadSettings = { connections: opts.connections, durationSec: opts.durationSec, warmupSec: opts.warmupSec };
  console.log(`\nLoad: ${load.connections} connections, ${load.warmupSec} s warm-up then ${load.durationSec} s per route`);
  const check = await preflight(baselineServer.base, BASELINE);
  if (!check.ok) throw new Error(`baseline server: ${check.message}`);

  // A deployment that has served traffic for a while has its hot code compiled by the JIT, and
  // its pools and PostgreSQL's buffers filled; a fresh process takes 5 to 10 s of load to get
  // there, longer than one route's warm-up, so the first route measured would pay for it alone.
  // Only the reads warm it: rows written now would have autovacuum running during the baseline.
  const rss = new RssSampler(service.pid);
  rss.start();
  // The service as it came up, before any load; the warm-up counts towards the overall peak.
  const idleRssMb = rss.nextPhase();
  const warm = await warmService(service, seeded, load, opts.routes);
  console.log(`  service warmed up: ${warm.join(', ') || 'nothing to warm'} (${SERVICE_WARMUP_SEC} s each, not measured)`);

  const before = await measure(baselineServer.base, BASELINE, load);
  console.log(`  ${BASELINE.label.padEnd(30)} ${fmt(before)}`);
  rss.nextPhase();
  const bench = await benchRoutes(service, seeded, rss, load, opts.routes);
  rss.stop();
  const after = await measure(baselineServer.base, BASELINE, load);
  console.log(`  ${BASELINE.label.padEnd(30)} ${fmt(after)} (again, after the routes)`);

  const baseline = { reqPerSec: (before.reqPerSec + after.reqPerSec) / 2, before, after };
  const failures = [
    ...(await problemsOf(baselineServer.base, BASELINE, before)),
    ...(await problemsOf(baselineServer.base, BASELINE, after)),
    ...bench.failures,
  ];
  return {
    load,
    baseline,
    routes: compareWithBaseline(bench.runs, baseline),
    failures,
    idleRssMb,
    peakRssMb: rss.peakMb,
  };
}

async function main(cleanup: Cleanup): Promise<number> {
  const opts = benchOptions();
  const unknown = (opts.routes ?? []).filter((r) => !(r in ROUTES));
  if (unknown.length > 0) throw new Error(`BENCH_ROUTES names unknown routes ${unknown.join(', ')}; known: ${Object.keys(ROUTES).join(', ')}`);
  const loadAtStart = os.loadavg()[0] ?? 0;
  if (loadAtStart > os.cpus().length) {
    console.log(`Note: the machine is busy (load average ${loadAtStart.toFixed(1)} on ${os.cpus().length} CPUs); figures will be noisy.`);
  }
  const work = mkdtempSync(path.join(os.tmpdir(), 'splitline-bench-'));
  cleanup.add('remove temporary directory', () => rmSync(work, { recursive: true, force: true }));

  let databaseUrl: string | undefined;
  if (opts.databaseUrl !== undefined) {
    const fresh = await freshPostgresDatabase(opts.databaseUrl);
    cleanup.add('drop the bench database', () => fresh.drop());
    databaseUrl = fresh.url;
  }
  const { seeded, description } = await prepareData(opts, work, databaseUrl);

  const baselineServer = await launchService({
    name: 'baseline server',
    program: ['--import', 'tsx', 'bench/baseline-server.ts'],
    logFile: path.join(work, 'baseline.log'),
    ready: { healthPath: '/' },
  });
  cleanup.add('stop the baseline server', () => baselineServer.stop());
  const service = await launchService({
    name: 'Splitline',
    program: await compiledProgram(),
    env: serviceEnv({ dataDir: work, databaseUrl, redisUrl: opts.redisUrl }),
    nodeArgs: opts.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${path.resolve(opts.cpuProfileDir)}`],
    logFile: path.join(work, 'service.log'),
    ready: { healthPath: '/healthz' },
    timeoutMs: 120_000,
  });
  cleanup.add('stop the service', () => service.stop());

  const { load, failures, ...measured } = await runLoad(baselineServer, service, seeded, opts);
  const partial = {
    generatedAt: new Date().toISOString(),
    database: opts.databaseUrl === undefined ? ('pglite' as const) : ('postgres' as const),
    databaseDescription: description,
    rateLimits: opts.redisUrl === undefined ? ('memory' as const) : ('redis' as const),
    machine: machine(loadAtStart),
    settings: { ...load, quick: opts.quick, ...(opts.routes === undefined ? {} : { routes: opts.routes }) },
    data: { receipts: seeded.receipts, otherMerchantsReceipts: seeded.otherReceipts, users: seeded.users.ok ? seeded.users.value.count : 0 },
    ...measured,
  };
  const report: Report = { ...partial, targets: evaluateTargets(partial), failures };
  console.log('\n' + markdown(report));
  const written = writeResults(report);
  console.log(`Written: ${path.relative(process.cwd(), written.json)}, ${path.relative(process.cwd(), written.md)}`);
  // The APK streaming bench starts services of its own (one per store), once this one has stopped.
  await service.stop();
  const apk = opts.apk.enabled ? await benchApk(opts.apk, cleanup) : { failures: [] };
  for (const f of apk.failures) console.error(f);
  if (failures.length > 0) {
    console.error(`\nThe bench found errors on ${failures.length} route(s). The service's last log lines:\n${service.tail()}`);
    return 1;
  }
  return apk.failures.length > 0 ? 1 : 0;
}

const cleanup = new Cleanup();
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    console.error(`\n${signal}: stopping`);
    void cleanup.run().then(() => process.exit(130));
  });
}
void main(cleanup)
  .catch((err: unknown) => {
    // After an interrupt, the servers were stopped under the running load: that error is ours.
    if (!interrupted) console.error(`\nBench failed: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  })
  .then(async (code) => {
    await cleanup.run();
    // Payment latency on the dev chain (bench/payments.ts) runs a service of its own, after these have stopped.
    const payments = interrupted ? 0 : await benchPayments();
    // The chain worker's cost per block (bench/chain-worker.ts, BENCH_WORKER=0 skips it): its own chain and database.
    const worker = interrupted ? 0 : await benchChainWorker();
    // The chain worker on the mainnet-shaped simulation (bench/mainnet.ts, BENCH_MAINNET=0 skips it).
    const mainnet = interrupted ? 0 : await benchMainnet();
    process.exit(Math.max(code, payments, worker, mainnet));
  });
